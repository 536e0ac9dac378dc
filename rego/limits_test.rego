package gpuadmit.builtin_test

import data.gpuadmit.builtin

test_init_peak_over_memory_limit_denied if {
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 30720 MiB, 0 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`, unsatisfiable_30g} with input as base
}

unsatisfiable_30g := `namespace "team-a": pod "llm": container "convert" needs 1 device(s) with 30720 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)`

test_fitting_pod_allowed_without_warnings if {
	count(builtin.deny) == 0 with input as fits
	count(builtin.warn) == 0 with input as fits
}

test_used_and_reserved_count if {
	inp := with_usage(fits, {"used": vec(1, 2048, 0), "reserved": vec(1, 4096, 0)})
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 2048 MiB used + 4096 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`} with input as inp
}

test_exactly_at_limit_allowed_with_warning if {
	inp := with_usage(fits, {"used": vec(0, 4096, 0)})
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": nvidia.com/gpumem will be at 100 % of its limit after this pod (24576 of 24576 MiB, ResourceQuota "gpu-quota")`} with input as inp
}

test_near_limit_threshold if {
	# 20480 + 1638 = 22118 is 89.99 % of 24576: no warning; 1639 more reaches 90 %.
	count(builtin.warn) == 0 with input as with_usage(fits, {"used": vec(0, 1638, 0)})
	count(builtin.warn) == 1 with input as with_usage(fits, {"used": vec(0, 1639, 0)})
	count(builtin.warn) == 0 with input as with_settings(with_usage(fits, {"used": vec(0, 1639, 0)}), {"nearLimitPercent": 95})
}

test_near_limit_zero_never_warns if {
	# nearLimitPercent 0 switches the warning off, even at the limit.
	count(builtin.warn) == 0 with input as with_settings(with_usage(fits, {"used": vec(0, 4096, 0)}), {"nearLimitPercent": 0})
	count(builtin.deny) == 0 with input as with_settings(with_usage(fits, {"used": vec(0, 4096, 0)}), {"nearLimitPercent": 0})
}

test_gpu_and_cores_limits if {
	inp := with_usage(fits, {
		"used": vec(3, 0, 250),
		"limits": {"gpu": limit(4, "limits.nvidia.com/gpu"), "gpucores": {"value": 300, "quota": "cores", "key": "limits.nvidia.com/gpucores"}},
	})
	inp2 := with_capacity(with_demand(inp, vec(2, 20480, 60), [container("server", "app", 2, 10240, 30)]), two_a10)
	builtin.deny == {
		`namespace "team-a": nvidia.com/gpu: pod needs 2, 3 used + 0 reserved, limit 4 (ResourceQuota "gpu-quota" limits.nvidia.com/gpu)`,
		`namespace "team-a": nvidia.com/gpucores: pod needs 60, 250 used + 0 reserved, limit 300 (ResourceQuota "cores" limits.nvidia.com/gpucores)`,
	} with input as inp2
}

test_zero_limit_blocks_and_invalid_limit_explained if {
	inp := with_usage(fits, {"limits": {"gpu": {"value": 0, "quota": "broken", "key": "limits.nvidia.com/gpu", "invalid": true}}})
	builtin.deny == {`namespace "team-a": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota "broken" limits.nvidia.com/gpu); the quota's value is not a whole number, so it blocks until it is fixed`} with input as inp
}

test_dimension_the_pod_does_not_use_is_not_checked if {
	# The namespace is over its cores limit already, but this pod needs no cores.
	inp := with_usage(fits, {"used": vec(0, 0, 500), "limits": {"gpucores": limit(100, "limits.nvidia.com/gpucores")}})
	count(builtin.deny) == 0 with input as inp
}

test_update_does_not_recount_the_pod if {
	inp := object.union(base, {"operation": "UPDATE"})
	count(builtin.deny) == 0 with input as inp
}

test_native_requests_quota_warns if {
	inp := with_usage(fits, {"nativeRequestQuotas": [{"quota": "native", "key": "requests.nvidia.com/gpumem"}]})
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": ResourceQuota "native" sets requests.nvidia.com/gpumem: Kubernetes charges a pod's init-container peak there for the pod's whole life, even after its init containers finish; use limits.nvidia.com/gpumem, which gpuadmit enforces and releases when init containers exit`} with input as inp
}

test_whole_card_named_in_the_denial if {
	whole := object.union(container("app", "app", 1, 24576, 100), {"gpumemPercent": 100})
	half := object.union(container("nb", "app", 2, 12288, 0), {"gpumemPercent": 50})
	inp := with_usage(with_demand(fits, vec(3, 49152, 100), [whole, half]), {"used": vec(1, 20480, 0)})
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 49152 MiB, 20480 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem); container "app" takes the whole device: 1 x 24576 MiB (gpumem unset or 0 books the whole card, as in HAMi); container "nb" takes 50 % of a device: 2 x 12288 MiB`} with input as without_capacity_checks(inp)
}

without_capacity_checks(inp) := with_capacity(inp, {"gpuNodes": 0, "eligibleNodes": 0, "maxDevicesPerNode": 0, "shapes": []})

# A second family's limits are checked as nvidia's, with its own resource
# names in the messages.
test_second_family_over_its_memory_limit_denied if {
	inp := with_ascend(no_nvidia, {"used": vec(1, 40960, 0)})
	builtin.deny == {`namespace "team-a": huawei.com/Ascend910B2-memory: pod needs 32768 MiB, 40960 MiB used + 0 MiB reserved, limit 65536 MiB (ResourceQuota "npu-quota" limits.huawei.com/Ascend910B2-memory)`} with input as inp
	count(builtin.warn) == 0 with input as inp
}

test_second_family_within_its_limit_allowed if {
	inp := with_ascend(no_nvidia, {"used": vec(1, 16384, 0)})
	count(builtin.deny) == 0 with input as inp
	count(builtin.warn) == 0 with input as inp
}

test_second_family_count_and_cores_limits if {
	inp := with_ascend(no_nvidia, {"used": vec(2, 0, 100), "reserved": vec(1, 0, 0), "limits": {
		"gpu": npu_limit(3, "limits.huawei.com/Ascend910B2"),
		"gpucores": npu_limit(120, "limits.huawei.com/Ascend910B2-core"),
	}})
	builtin.deny == {
		`namespace "team-a": huawei.com/Ascend910B2: pod needs 1, 2 used + 1 reserved, limit 3 (ResourceQuota "npu-quota" limits.huawei.com/Ascend910B2)`,
		`namespace "team-a": huawei.com/Ascend910B2-core: pod needs 50, 100 used + 0 reserved, limit 120 (ResourceQuota "npu-quota" limits.huawei.com/Ascend910B2-core)`,
	} with input as inp
}

# A pod asking for nvidia and Ascend devices is denied once, for the family
# that is over its limit; the other family's limit does not count for it.
test_only_the_family_over_its_limit_denied if {
	ascend_over := with_ascend(fits, {"used": vec(1, 40960, 0)})
	builtin.deny == {`namespace "team-a": huawei.com/Ascend910B2-memory: pod needs 32768 MiB, 40960 MiB used + 0 MiB reserved, limit 65536 MiB (ResourceQuota "npu-quota" limits.huawei.com/Ascend910B2-memory)`} with input as ascend_over
	count(builtin.warn) == 0 with input as ascend_over

	nvidia_over := with_ascend(with_usage(fits, {"used": vec(1, 8192, 0)}), {})
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 8192 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`} with input as nvidia_over
}

test_second_family_near_limit_warns if {
	# 28672 + 32768 = 61440 is 93 % of 65536.
	inp := with_ascend(fits, {"used": vec(1, 28672, 0)})
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": huawei.com/Ascend910B2-memory will be at 93 % of its limit after this pod (61440 of 65536 MiB, ResourceQuota "npu-quota")`} with input as inp
	count(builtin.warn) == 0 with input as with_settings(inp, {"nearLimitPercent": 95})
}

test_family_the_pod_does_not_name_is_not_checked if {
	# The namespace is over its Ascend memory limit already, but this pod
	# asks for nvidia devices only.
	inp := with_family(fits, "ascend-910B2", ascend_names, zero, [], {
		"used": vec(3, 98304, 0),
		"limits": {"gpumem": npu_limit(65536, "limits.huawei.com/Ascend910B2-memory")},
	})
	inp.namespaceUsage.families["ascend-910B2"].after.gpumem > 65536
	count(builtin.deny) == 0 with input as inp
	count(builtin.warn) == 0 with input as inp
}

# A ResourceClaim (input.claim set) is denied by the same limits; the message names a claim.
test_claim_over_memory_limit_names_the_claim if {
	inp := object.union(with_usage(fits, {"used": vec(1, 8192, 0)}), {"claim": {"name": "hami-train-app", "deviceClassNames": ["hami-core-gpu.project-hami.io"]}})
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: claim needs 20480 MiB, 8192 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`} with input as inp
}

# A ResourceQuota with scopes limits only the pods in its scopes, against
# what those pods use (scopedLimits: the decision package lists, every
# family's in one list, the scoped quotas the pod is in, each with its own
# used and after).
scoped_gpu(used, value) := {
	"family": "nvidia", "dimension": "gpu", "value": value, "quota": "high-gpus", "key": "limits.nvidia.com/gpu", "invalid": false,
	"scopes": ["PriorityClass In (high)"], "used": used, "reserved": 0, "after": used + 1, "afterPercent": percent(used + 1, value),
}

with_scoped(inp, limits) := object.union(inp, {"namespaceUsage": {"scopedLimits": limits}})

test_scoped_limit_over_denied_with_its_own_usage if {
	inp := with_scoped(fits, [scoped_gpu(1, 1)])
	builtin.deny == {`namespace "team-a": nvidia.com/gpu: pod needs 1, 1 used by the pods in the scopes of ResourceQuota "high-gpus" (PriorityClass In (high)) + 0 reserved, limit 1 (limits.nvidia.com/gpu)`} with input as inp
}

test_scoped_limit_reads_its_used_not_the_namespace_s if {
	# The namespace uses 7 GPUs, none of them in the quota's scopes: the
	# pod fits the scoped limit of 1 (and is warned it reaches it).
	inp := with_scoped(with_usage(fits, {"used": vec(7, 0, 0)}), [scoped_gpu(0, 1)])
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": nvidia.com/gpu will be at 100 % of its limit for the pods in the scopes of ResourceQuota "high-gpus" after this pod (1 of 1)`} with input as inp
}

test_scoped_and_unscoped_limits_both_checked if {
	# Both limits apply: the unscoped memory limit denies though the scoped
	# GPU limit is fine, and the other way round.
	mem_over := with_scoped(with_usage(fits, {"used": vec(0, 8192, 0)}), [scoped_gpu(0, 2)])
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 8192 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`} with input as mem_over
	count(builtin.deny) == 1 with input as with_scoped(fits, [scoped_gpu(2, 2)])
}

test_scoped_limit_not_checked_for_a_dimension_the_pod_does_not_use if {
	inp := with_scoped(fits, [object.union(scoped_gpu(5, 1), {"dimension": "gpucores"})])
	count(builtin.deny) == 0 with input as inp
}

# Team limits (GPUClusterQuota)

# A team quota's limit as the decision package lists it (teamLimits): the
# team's (or, per user, alice's) used and reserved over its members, after
# = used + reserved + the pod's demand (fits: 1 GPU, 20480 MiB).
team_limit(dim, value, used, reserved, per_user) := {
	"quota": "ml", "family": "nvidia", "dimension": dim, "key": concat("", ["limits.", names[dim]]), "value": value,
	"invalid": false, "perUser": per_user, "user": "alice", "members": ["ml-dev", "ml-train"],
	"used": used, "reserved": reserved, "after": (used + reserved) + fits.demand.effective[dim],
	"afterPercent": percent((used + reserved) + fits.demand.effective[dim], value),
}

with_teams(inp, limits) := object.union(inp, {"teamLimits": limits})

test_team_limit_over_denied_naming_the_team_quota if {
	inp := with_teams(fits, [team_limit("gpu", 4, 3, 1, false)])
	builtin.deny == {`namespace "team-a": nvidia.com/gpu: pod needs 1, 3 used + 1 reserved in the team's namespaces, limit 4 (GPUClusterQuota "ml" limits.nvidia.com/gpu)`} with input as inp
}

test_per_user_limit_over_denied_naming_the_user if {
	inp := with_teams(fits, [team_limit("gpu", 2, 2, 0, true)])
	builtin.deny == {`namespace "team-a": nvidia.com/gpu: pod needs 1, 2 used + 0 reserved by user "alice" in the team's namespaces, limit 2 (user "alice" in GPUClusterQuota "ml" limits.nvidia.com/gpu)`} with input as inp
}

test_team_limit_denies_though_the_namespace_quota_fits if {
	# The namespace's own quota (24576 MiB, nothing used) lets the pod in;
	# the team's 32768 MiB, 16384 of them used elsewhere, does not.
	inp := with_teams(fits, [team_limit("gpumem", 32768, 16384, 0, false)])
	builtin.deny == {`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 16384 MiB used + 0 MiB reserved in the team's namespaces, limit 32768 MiB (GPUClusterQuota "ml" limits.nvidia.com/gpumem)`} with input as inp
}

test_every_limit_passed_is_reported if {
	# The namespace's quota, the team's and alice's: the pod passes all
	# three, and each is named (the tightest wins, none hides another).
	inp := with_teams(with_usage(fits, {"used": vec(0, 8192, 0)}), [team_limit("gpu", 4, 4, 0, false), team_limit("gpu", 1, 1, 0, true)])
	builtin.deny == {
		`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 8192 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`,
		`namespace "team-a": nvidia.com/gpu: pod needs 1, 4 used + 0 reserved in the team's namespaces, limit 4 (GPUClusterQuota "ml" limits.nvidia.com/gpu)`,
		`namespace "team-a": nvidia.com/gpu: pod needs 1, 1 used + 0 reserved by user "alice" in the team's namespaces, limit 1 (user "alice" in GPUClusterQuota "ml" limits.nvidia.com/gpu)`,
	} with input as inp
}

test_team_limit_exactly_reached_allowed_with_warning if {
	inp := with_teams(fits, [team_limit("gpu", 4, 2, 1, false)])
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": nvidia.com/gpu will be at 100 % of the limit of GPUClusterQuota "ml" after this pod (4 of 4)`} with input as inp
}

test_per_user_near_limit_warns_naming_the_user if {
	inp := with_teams(fits, [team_limit("gpumem", 20480, 0, 0, true)])
	count(builtin.deny) == 0 with input as inp
	builtin.warn == {`namespace "team-a": nvidia.com/gpumem will be at 100 % of the limit of user "alice" in GPUClusterQuota "ml" after this pod (20480 of 20480 MiB)`} with input as inp
}

test_team_limit_not_checked_for_a_dimension_the_pod_does_not_use if {
	# The team is over its cores limit already, but this pod needs no cores.
	inp := with_teams(fits, [object.union(team_limit("gpucores", 100, 500, 0, false), {"after": 500, "afterPercent": 500})])
	count(builtin.deny) == 0 with input as inp
	count(builtin.warn) == 0 with input as inp
}

test_team_limit_not_checked_on_update if {
	inp := object.union(with_teams(fits, [team_limit("gpu", 1, 5, 0, false)]), {"operation": "UPDATE"})
	count(builtin.deny) == 0 with input as inp
}

test_invalid_team_limit_blocks_and_is_explained if {
	inp := with_teams(fits, [object.union(team_limit("gpu", 0, 0, 0, false), {"invalid": true})])
	builtin.deny == {`namespace "team-a": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved in the team's namespaces, limit 0 (GPUClusterQuota "ml" limits.nvidia.com/gpu); the quota's value is not a whole number, so it blocks until it is fixed`} with input as inp
}

test_no_team_no_team_rule if {
	count(builtin.deny) == 0 with input as with_teams(fits, [])
	count(builtin.warn) == 0 with input as with_teams(fits, [])
}
