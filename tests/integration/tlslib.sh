# shellcheck shell=bash
# TLS helpers, sourced after s3lib.sh: a private CA made here (openssl), server certificates
# signed by it, and stunnel in front of plain-HTTP test servers on 127.0.0.1.
TLS_DIR="$W/tls"
STUNNEL_PID=
mkdir -p "$TLS_DIR"
chmod 700 "$TLS_DIR"

# make_ca NAME: a self-signed CA in $TLS_DIR/NAME.pem (+ NAME.key).
make_ca() {
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=resume-run test CA $1" \
		-keyout "$TLS_DIR/$1.key" -out "$TLS_DIR/$1.pem" 2>/dev/null || fail "cannot make CA $1"
}

# make_cert NAME CA SAN: a server certificate for SAN (e.g. "IP:127.0.0.1,DNS:localhost")
# signed by CA, in $TLS_DIR/NAME.pem (+ NAME.key).
make_cert() {
	local name=$1 ca=$2 san=$3
	openssl req -new -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout "$TLS_DIR/$name.key" \
		-out "$TLS_DIR/$name.csr" 2>/dev/null || fail "cannot make a key for $name"
	printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" \
		> "$TLS_DIR/$name.ext"
	openssl x509 -req -in "$TLS_DIR/$name.csr" -CA "$TLS_DIR/$ca.pem" -CAkey "$TLS_DIR/$ca.key" \
		-CAcreateserial -days 2 -extfile "$TLS_DIR/$name.ext" -out "$TLS_DIR/$name.pem" \
		2>/dev/null || fail "cannot sign $name"
}

# make_expired_cert NAME CA: a certificate for 127.0.0.1 signed by CA whose validity ended
# yesterday (OpenSSL 3.0's x509 cannot back-date, so the cryptography package signs it).
make_expired_cert() {
	"$PY" - "$TLS_DIR/$1" "$TLS_DIR/$2" <<'PY' || fail "cannot make the expired certificate"
import datetime, ipaddress, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
out, ca = sys.argv[1:]
ca_key = serialization.load_pem_private_key(open(ca + ".key", "rb").read(), None)
ca_cert = x509.load_pem_x509_certificate(open(ca + ".pem", "rb").read())
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "expired")]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=3))
        .not_valid_after(now - datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                    x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256()))
open(out + ".pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(out + ".key", "wb").write(key.private_bytes(serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY
}

# tls_service NAME CERT TARGET_PORT [PORT]: adds a stunnel service that accepts TLS on PORT or
# a free port (printed) with CERT and forwards plain TCP to 127.0.0.1:TARGET_PORT. Call
# before start_stunnel.
tls_service() {
	local port=${4:-}
	[ -n "$port" ] || port=$(free_port)
	printf '[%s]\naccept = 127.0.0.1:%s\nconnect = 127.0.0.1:%s\ncert = %s\nkey = %s\n\n' \
		"$1" "$port" "$3" "$TLS_DIR/$2.pem" "$TLS_DIR/$2.key" >> "$TLS_DIR/services.conf"
	echo "$port"
}

# start_stunnel PORT...: runs stunnel in the foreground with every service added, and waits
# until each PORT accepts connections.
start_stunnel() {
	local p
	{ printf 'foreground = yes\npid =\noutput = %s\ndebug = 5\n\n' "$W/stunnel.log"
	  cat "$TLS_DIR/services.conf"; } > "$TLS_DIR/stunnel.conf"
	stunnel4 "$TLS_DIR/stunnel.conf" > "$W/stunnel.out" 2>&1 &
	STUNNEL_PID=$!
	for p in "$@"; do
		wait_for 20 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $p))" 2>/dev/null ||
			fail "stunnel does not listen on $p: $(cat "$W/stunnel.out")"
	done
}

stop_stunnel() {
	[ -n "$STUNNEL_PID" ] || return 0
	kill "$STUNNEL_PID" 2>/dev/null || true
	wait "$STUNNEL_PID" 2>/dev/null || true
	STUNNEL_PID=
}
