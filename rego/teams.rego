# Team GPU limits
# A GPUClusterQuota limits the namespaces it counts together (spec.hard),
# and each user within them (spec.perUser). A pod is denied when the team's
# usage (or its user's), its reservations and the pod's effective demand
# together exceed a limit, whatever its namespace's own quotas allow: the
# tightest limit wins, and every limit passed is reported. The input lists
# one entry per quota, family, dimension and per-user flag (teamLimits),
# each with its used, reserved, after (used + reserved + this pod) and
# afterPercent. teamLimits[0]: OPA's rule index skips the rules when no
# team quota counts the namespace.
package gpuadmit.builtin

deny contains msg if {
	input.teamLimits[0]
	input.operation == "CREATE"
	some limit in input.teamLimits
	limit.after > limit.value
	dim := limit.dimension
	demand := input.demand.families[limit.family]
	demand.effective[dim] > 0
	u := units[dim]
	msg := sprintf("namespace %q: %s: %s needs %d%s, %d%s used + %d%s reserved %s, limit %d%s (%s %s)%s", [
		input.namespace, input.settings.families[limit.family].resourceNames[dim], subject,
		demand.effective[dim], u,
		limit.used, u,
		limit.reserved, u, team_scope(limit),
		limit.value, u, team_quota(limit), limit.key, concat("", [invalid_note(limit), device_note(demand, dim)]),
	])
}

warn contains msg if {
	input.teamLimits[0]
	input.operation == "CREATE"
	near := input.settings.nearLimitPercent
	near > 0 # 0: never warn
	some limit in input.teamLimits
	limit.afterPercent >= near
	limit.after <= limit.value
	dim := limit.dimension
	input.demand.families[limit.family].effective[dim] > 0
	msg := sprintf("namespace %q: %s will be at %d %% of the limit of %s after this pod (%d of %d%s)", [
		input.namespace, input.settings.families[limit.family].resourceNames[dim],
		limit.afterPercent, team_quota(limit), limit.after, limit.value, units[dim],
	])
}

# team_scope says whose usage a limit counts: the team's namespaces, or one
# user's in them.
team_scope(limit) := sprintf("by user %q in the team's namespaces", [limit.user]) if limit.perUser

else := "in the team's namespaces"

# team_quota names the quota and, for a per-user limit, the user.
team_quota(limit) := sprintf("user %q in GPUClusterQuota %q", [limit.user, limit.quota]) if limit.perUser

else := sprintf("GPUClusterQuota %q", [limit.quota])
