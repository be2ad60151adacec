"""A trainer that handles the checkpoint signal but never checkpoints, and reports SIGTERM."""
import signal
import sys
import time

asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))


def on_term(s, f):
    print(f"trainer got SIGTERM after {len(asked)} checkpoint request(s)", flush=True)
    sys.exit(143)


signal.signal(signal.SIGTERM, on_term)
print("handlers installed", flush=True)
end = time.time() + 120
while time.time() < end:
    time.sleep(0.02)
sys.exit(1)
