"""Checks scripts/deploy/k8s/job.yaml for the fields resume-run relies on (no cluster here:
kubectl needs an API server even for --dry-run=client, and Debian's kubernetes-client 1.20
predates podFailurePolicy). Field names and rules as the Kubernetes API (batch/v1 Job,
1.26+) has them. Exits 1 with one line per problem."""
import re
import sys

import yaml


def main(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    problems = []

    def need(cond, what):
        if not cond:
            problems.append(what)

    kinds = {d.get("kind"): d for d in docs}
    job, sa = kinds.get("Job"), kinds.get("ServiceAccount")
    need(job is not None and job.get("apiVersion") == "batch/v1", "a batch/v1 Job")
    need(sa is not None and sa.get("apiVersion") == "v1", "a v1 ServiceAccount")
    if problems:
        return problems
    spec = job["spec"]
    pod = spec["template"]["spec"]
    containers = pod["containers"]
    names = {c["name"] for c in containers}
    # podFailurePolicy is only allowed with restartPolicy Never.
    need(pod.get("restartPolicy") == "Never", "restartPolicy: Never (podFailurePolicy needs it)")
    rules = spec.get("podFailurePolicy", {}).get("rules", [])
    exit_rule = [r for r in rules if "onExitCodes" in r]
    need(len(exit_rule) == 1, "one onExitCodes rule")
    if exit_rule:
        r = exit_rule[0]
        oc = r["onExitCodes"]
        need(r.get("action") == "Ignore", "exit-code rule action Ignore")
        need(oc.get("operator") == "In" and 75 in oc.get("values", []), "onExitCodes In [75]")
        need(0 not in oc.get("values", []), "0 is not allowed in onExitCodes In")
        need(oc.get("containerName") in names, "onExitCodes.containerName names a container")
    cond_rule = [r for r in rules if "onPodConditions" in r]
    need(any(r.get("action") == "Ignore" and
             any(c.get("type") == "DisruptionTarget" for c in r["onPodConditions"])
             for r in cond_rule), "an Ignore rule on the DisruptionTarget condition")
    for r in rules:
        need(r.get("action") in ("Ignore", "FailJob", "Count"), "rule action %r" % r.get("action"))
        need(("onExitCodes" in r) != ("onPodConditions" in r), "each rule has exactly one matcher")
    # The agent's --grace must end before the kubelet's SIGKILL.
    tgps = pod.get("terminationGracePeriodSeconds")
    need(isinstance(tgps, int), "terminationGracePeriodSeconds set")
    rr = [c for c in containers if c.get("command", [""])[0] == "resume-run"]
    need(len(rr) == 1, "one container whose command is resume-run")
    if rr and isinstance(tgps, int):
        cmd = rr[0]["command"]
        need("--" in cmd, "resume-run's command ends its options with --")
        grace = int(cmd[cmd.index("--grace") + 1]) if "--grace" in cmd else 25
        need(grace < tgps, "--grace (%d) below terminationGracePeriodSeconds (%d)" % (grace, tgps))
        env = {e["name"]: e.get("value") for e in rr[0].get("env", [])}
        need("RESUME_RUN_STORE" in env and "RESUME_RUN_ID" in env, "store and run id in env")
        need(not any(k in env for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")),
             "no static keys in the manifest")
    # Credentials as the SDKs take them: IRSA (EKS) and Workload Identity (GKE).
    need(pod.get("serviceAccountName") == sa["metadata"]["name"], "the pod uses the ServiceAccount")
    ann = sa["metadata"].get("annotations", {})
    need(re.match(r"arn:aws:iam::\d{12}:role/.+", ann.get("eks.amazonaws.com/role-arn", "")),
         "eks.amazonaws.com/role-arn annotation (IRSA)")
    need(re.match(r".+@.+\.iam\.gserviceaccount\.com$",
                  ann.get("iam.gke.io/gcp-service-account", "")),
         "iam.gke.io/gcp-service-account annotation (Workload Identity)")
    return problems


if __name__ == "__main__":
    found = main(sys.argv[1])
    for p in found:
        print("job.yaml: missing or wrong: " + p)
    sys.exit(1 if found else 0)
