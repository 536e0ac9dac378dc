package gpuadmit.builtin_test

import data.gpuadmit.builtin

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
