# Shared fixtures for the policy tests: a PolicyInput (docs/policy-input.md)
# for a pod with an init container (30 GiB) and an app container (4 GiB) in
# team-a, a 24 GiB quota, and one node with one 24 GiB device.
package gpuadmit.builtin_test

names := {
	"gpu": "nvidia.com/gpu",
	"gpumem": "nvidia.com/gpumem",
	"gpumem-percentage": "nvidia.com/gpumem-percentage",
	"gpucores": "nvidia.com/gpucores",
}

container(name, role, gpu, mem, cores) := {
	"name": name, "role": role, "gpu": gpu,
	"gpumemPerDevice": mem, "gpumemPercent": 0, "gpucoresPerDevice": cores, "unresolved": false,
	"total": {"gpu": gpu, "gpumem": gpu * mem, "gpucores": gpu * cores},
}

vec(g, m, c) := {"gpu": g, "gpumem": m, "gpucores": c}

limit(v, key) := {"value": v, "quota": "gpu-quota", "key": key}

a10 := {"nodes": 1, "example": "node1", "devices": [{"gpumem": 24576, "gpucores": 100}], "deviceCount": 1, "smallest": {"gpumem": 24576, "gpucores": 100}}

base := complete({
	"apiVersion": "gpuadmit.io/v1alpha1",
	"kind": "PolicyInput",
	"operation": "CREATE",
	"dryRun": false,
	"namespace": "team-a",
	"pod": {"name": "llm"},
	"demand": {
		"effective": vec(1, 30720, 0),
		"containers": [container("convert", "init", 1, 30720, 0), container("server", "app", 1, 4096, 0)],
		"unresolved": [],
		"errors": [],
		"maxPerDevice": vec(1, 30720, 0),
	},
	"namespaceUsage": {
		"used": vec(0, 0, 0),
		"reserved": vec(0, 0, 0),
		"limits": {"gpumem": limit(24576, "limits.nvidia.com/gpumem")},
		"nativeRequestQuotas": [],
	},
	"capacity": {
		"gpuNodes": 1, "eligibleNodes": 1, "maxDevicesPerNode": 1,
		"largestDevice": {"node": "node1", "gpumem": 24576, "gpucores": 100},
		"shapes": [a10],
	},
	"settings": {"resourceNames": names, "nearLimitPercent": 90, "unsatisfiable": "deny"},
})

# complete derives what the decision package derives: namespaceUsage.after
# (used + reserved + the pod's demand) and each limit's afterPercent.
complete(inp) := object.union(inp, {"namespaceUsage": {
	"after": {dim: a |
		some dim in ["gpu", "gpumem", "gpucores"]
		a := (inp.namespaceUsage.used[dim] + inp.namespaceUsage.reserved[dim]) + inp.demand.effective[dim]
	},
	"limits": {dim: object.union(l, {"afterPercent": percent(a, l.value)}) |
		some dim, l in inp.namespaceUsage.limits
		a := (inp.namespaceUsage.used[dim] + inp.namespaceUsage.reserved[dim]) + inp.demand.effective[dim]
	},
}})

percent(a, v) := floor((a * 100) / v) if v > 0

else := 0

# with_demand replaces the pod's demand (effective and containers).
# maxPerDevice is recomputed as the decision package computes it.
with_demand(inp, eff, containers) := complete(object.union(inp, {"demand": object.union(inp.demand, {
	"effective": eff, "containers": containers,
	"maxPerDevice": vec(
		max([c.gpu | some c in containers]),
		max([c.gpumemPerDevice | some c in containers]),
		max([c.gpucoresPerDevice | some c in containers]),
	),
})}))

# fits is a pod that fits everything: init 20 GiB, app 10 GiB.
fits := with_demand(base, vec(1, 20480, 0), [container("convert", "init", 1, 20480, 0), container("server", "app", 1, 10240, 0)])

with_usage(inp, usage) := complete(object.union(inp, {"namespaceUsage": object.union(inp.namespaceUsage, usage)}))

with_capacity(inp, capacity) := object.union(inp, {"capacity": capacity})

with_settings(inp, settings) := object.union(inp, {"settings": object.union(inp.settings, settings)})

# without_limits drops every quota limit (object.union would merge them).
without_limits(inp) := json.patch(inp, [{"op": "replace", "path": "/namespaceUsage/limits", "value": {}}])
