"""The official Kubernetes Python client against the simulated cluster.

Usage: official_client.py KUBECONFIG NAMESPACE IMAGE. Prints one JSON object with what it saw;
exits non-zero (with the error) when a call fails unexpectedly. Every wait is bounded:
the watch by timeout_seconds, the event loop by that watch.
"""
import json
import sys
import threading

from kubernetes import client, config, dynamic, watch
from kubernetes.dynamic.exceptions import DynamicApiError

kubeconfig, namespace, image = sys.argv[1], sys.argv[2], sys.argv[3]
config.load_kube_config(config_file=kubeconfig)
core = client.CoreV1Api()
out = {}

core.create_namespace({"metadata": {"name": namespace}})
out["namespaces"] = sorted(ns.metadata.name for ns in core.list_namespace().items)
out["pods_before"] = [p.metadata.name for p in core.list_namespaced_pod(namespace).items]

# A watch running while the pod is created, from the resourceVersion of a list taken before, so
# it sees the pod's ADDED and then MODIFIED up to Ready whichever request reaches the server first.
events = []
w = watch.Watch()


def stream(resource_version):
    for event in w.stream(core.list_namespaced_pod, namespace=namespace, resource_version=resource_version, timeout_seconds=30):
        pod = event["object"]
        events.append({"type": event["type"], "name": pod.metadata.name, "phase": pod.status.phase if pod.status else None})
        ready = any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or [])) if pod.status else False
        if event["type"] == "MODIFIED" and ready:
            w.stop()


listed = core.list_namespaced_pod(namespace)
thread = threading.Thread(target=stream, args=(listed.metadata.resource_version,), daemon=True)
thread.start()
core.create_namespaced_pod(
    namespace,
    {"metadata": {"name": "watched"}, "spec": {"containers": [{"name": "main", "image": image, "command": ["serve"]}]}},
)
thread.join(timeout=40)
out["watch_events"] = events
out["pods_after"] = [p.metadata.name for p in core.list_namespaced_pod(namespace).items]

# Server-side apply through the dynamic client (the typed patch methods of this release cannot
# send the apply content type): "owner" sets data.key; "other" applying a different value
# conflicts (409) unless it forces, which the client sends as force=True.
dynamic_client = dynamic.DynamicClient(client.ApiClient())
configmaps = dynamic_client.resources.get(api_version="v1", kind="ConfigMap")


def apply(manager, value, force=None):
    # The body goes as text: this release's REST layer serializes only JSON content types itself.
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied", "namespace": namespace}, "data": {"key": value}}
    return dynamic_client.server_side_apply(configmaps, body=json.dumps(body), name="applied", namespace=namespace, field_manager=manager, force_conflicts=force)


apply("owner", "a")
try:
    apply("other", "b")
    out["apply_without_force"] = {"status": 200}
except DynamicApiError as error:
    out["apply_without_force"] = {"status": error.status, "reason": json.loads(error.body).get("reason")}
forced = apply("other", "b", force=True)
out["apply_with_force"] = {
    "value": forced.data.key,
    "managers": sorted(entry.manager for entry in forced.metadata.managedFields or []),
}

print(json.dumps(out))
