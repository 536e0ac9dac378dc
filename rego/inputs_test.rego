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
	"settings": {
		"resourceNames": names, "memoryFactor": 1,
		"families": {"nvidia": {"resourceNames": names, "memoryFactor": 1}},
		"nearLimitPercent": 90, "unsatisfiable": "deny",
	},
})

# complete derives what the decision package derives: namespaceUsage.after
# (used + reserved + the pod's demand) and each limit's afterPercent, for
# the first-level (nvidia) fields and for every family under families; and
# the nvidia family's entries under demand.families and
# namespaceUsage.families, copied from the first-level fields (present when
# the pod names nvidia resources or the namespace uses, reserves or limits
# them, as in the decision package). Other families' entries are kept.
complete(inp) := object.union(object.remove(inp, ["demand", "namespaceUsage", "guard"]), {
	"guard": every_candidate,
	"demand": object.union(object.remove(inp.demand, ["families"]), {"families": demand_families(inp.demand)}),
	"namespaceUsage": object.union(object.remove(inp.namespaceUsage, ["after", "limits", "families"]), object.union(
		family_usage(inp.namespaceUsage, inp.demand.effective),
		{"families": usage_families(inp)},
	)),
})

# every_candidate is input.guard naming a candidate in every list: the
# index skips no guarded rule, so these tests check each rule's own
# condition (the decision package's TestGuardsDecideAsUnguarded checks the
# lists it computes against the rules without guards).
every_candidate := {"quiet": false, "overLimit": ["*"], "nearLimit": ["*"], "unfit": ["*"], "unresolvedFamilies": ["*"]}

# family_usage is the derived part of one family's usage: after and the
# limits with their afterPercent.
family_usage(u, eff) := {
	"after": {dim: a |
		some dim in ["gpu", "gpumem", "gpucores"]
		a := (u.used[dim] + u.reserved[dim]) + eff[dim]
	},
	"limits": {dim: object.union(l, {"afterPercent": percent(a, l.value)}) |
		some dim, l in u.limits
		a := (u.used[dim] + u.reserved[dim]) + eff[dim]
	},
}

zero := vec(0, 0, 0)

demand_families(d) := object.union(
	{f: fd | some f, fd in object.get(d, "families", {}); f != "nvidia"},
	nvidia_demand(d),
)

nvidia_demand(d) := {"nvidia": {
	"effective": d.effective, "containers": d.containers,
	"unresolved": d.unresolved, "maxPerDevice": d.maxPerDevice,
}} if {
	count(d.containers) > 0
} else := {}

usage_families(inp) := object.union(
	{f: object.union(u, family_usage(u, object.get(inp.demand, ["families", f, "effective"], zero))) |
		some f, u in object.get(inp.namespaceUsage, "families", {})
		f != "nvidia"
	},
	nvidia_usage(inp),
)

nvidia_usage(inp) := {"nvidia": object.union(
	{"used": inp.namespaceUsage.used, "reserved": inp.namespaceUsage.reserved},
	family_usage(inp.namespaceUsage, inp.demand.effective),
)} if {
	nvidia_in_view(inp)
} else := {}

nvidia_in_view(inp) if count(inp.demand.containers) > 0

nvidia_in_view(inp) if inp.namespaceUsage.used != zero

nvidia_in_view(inp) if inp.namespaceUsage.reserved != zero

nvidia_in_view(inp) if count(inp.namespaceUsage.limits) > 0

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

# without_limits drops every nvidia quota limit (object.union would merge
# them).
without_limits(inp) := complete(json.patch(inp, [{"op": "replace", "path": "/namespaceUsage/limits", "value": {}}]))

# A second device family: Huawei's Ascend 910B2 as HAMi's ascend backend
# names it (no memory percentage resource).
ascend_names := {
	"gpu": "huawei.com/Ascend910B2",
	"gpumem": "huawei.com/Ascend910B2-memory",
	"gpumem-percentage": "",
	"gpucores": "huawei.com/Ascend910B2-core",
}

npu_limit(v, key) := {"value": v, "quota": "npu-quota", "key": key}

# with_family adds family f to inp: the pod's demand in it (effective and
# containers; none for a family the pod does not name), the namespace's
# usage of it (used, reserved, limits; zeros and no limits unless given) and
# the family's settings.
with_family(inp, f, names, eff, containers, usage) := complete(object.union(inp, {
	"demand": {"families": family_demand(f, eff, containers)},
	"namespaceUsage": {"families": {f: object.union({"used": zero, "reserved": zero, "limits": {}}, usage)}},
	"settings": {"families": {f: {"resourceNames": names, "memoryFactor": 1}}},
}))

family_demand(f, eff, containers) := {f: {
	"effective": eff, "containers": containers, "unresolved": [],
	"maxPerDevice": vec(
		max([c.gpu | some c in containers]),
		max([c.gpumemPerDevice | some c in containers]),
		max([c.gpucoresPerDevice | some c in containers]),
	),
}} if {
	count(containers) > 0
} else := {}

# with_ascend is inp with the pod asking for one Ascend NPU with 32768 MiB
# and 50 cores, in a namespace whose npu-quota limits the Ascend memory to
# 65536 MiB; usage adds to or replaces the namespace's Ascend usage.
with_ascend(inp, usage) := with_family(inp, "ascend-910B2", ascend_names, vec(1, 32768, 50), [container("npu", "app", 1, 32768, 50)], object.union(
	{"limits": {"gpumem": npu_limit(65536, "limits.huawei.com/Ascend910B2-memory")}},
	usage,
))

# no_nvidia is base without any nvidia demand or limit: the pod names only
# the families with_family adds.
no_nvidia := without_limits(complete(object.union(base, {"demand": {
	"effective": zero, "containers": [], "unresolved": [], "maxPerDevice": zero,
}})))
