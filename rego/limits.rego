# Namespace GPU limits
# A pod is denied when the namespace's usage, its reservations and the pod's
# effective demand together exceed a limit set by a ResourceQuota
# (limits.<resource name>). Warnings flag a namespace that reaches the
# near-limit threshold, and native requests.<resource name> quotas, which
# Kubernetes charges with the init-container peak for the pod's whole life.
package gpuadmit.builtin

# Every deny and warn rule starts with input.guard.quiet == false: the
# input sets quiet only when every list the built-in rules start from is
# empty, so that OPA's rule index skips all of them with one lookup when
# none can fire (docs/policy-input.md, guard).

units := {"gpu": "", "gpumem": " MiB", "gpucores": ""}

# Limits are checked on CREATE: an UPDATE cannot change a pod's GPU requests
# and the pod is already counted in the namespace's usage. The input carries
# namespaceUsage.after (used + reserved + this pod) and each limit's
# afterPercent, so the policies compare instead of doing arithmetic.
# input.guard.overLimit[0] and nearLimit[0]: OPA's rule index skips a rule
# whose candidate list (computed with the input) is empty; the rule still
# checks its own condition (docs/policy-input.md, guard).
deny contains msg if {
	input.guard.quiet == false
	input.guard.overLimit[0]
	input.operation == "CREATE"
	some family, usage in input.namespaceUsage.families
	some dim, limit in usage.limits
	usage.after[dim] > limit.value
	demand := input.demand.families[family]
	demand.effective[dim] > 0
	u := units[dim]
	msg := sprintf("namespace %q: %s: %s needs %d%s, %d%s used + %d%s reserved, limit %d%s (ResourceQuota %q %s)%s", [
		input.namespace, input.settings.families[family].resourceNames[dim], subject,
		demand.effective[dim], u,
		usage.used[dim], u,
		usage.reserved[dim], u,
		limit.value, u, limit.quota, limit.key, concat("", [invalid_note(limit), device_note(demand, dim)]),
	])
}

# A ResourceQuota with scopes (spec.scopes, spec.scopeSelector) limits only
# the pods in its scopes, against what those pods use: the input lists the
# limits of the scoped quotas this pod is in, every family's
# (namespaceUsage.scopedLimits), each with its own used, reserved (every
# reservation of the namespace: its pod's scopes are unknown) and after.
# Claims are in no scope. scopedLimits[0]: OPA's rule index skips the rules
# when there is none.
deny contains msg if {
	input.guard.quiet == false
	input.namespaceUsage.scopedLimits[0]
	input.operation == "CREATE"
	some limit in input.namespaceUsage.scopedLimits
	limit.after > limit.value
	dim := limit.dimension
	demand := input.demand.families[limit.family]
	demand.effective[dim] > 0
	u := units[dim]
	msg := sprintf("namespace %q: %s: %s needs %d%s, %d%s used by the pods in the scopes of ResourceQuota %q (%s) + %d%s reserved, limit %d%s (%s)%s", [
		input.namespace, input.settings.families[limit.family].resourceNames[dim], subject,
		demand.effective[dim], u,
		limit.used, u, limit.quota, concat(", ", limit.scopes),
		limit.reserved, u,
		limit.value, u, limit.key, concat("", [invalid_note(limit), device_note(demand, dim)]),
	])
}

warn contains msg if {
	input.guard.quiet == false
	input.namespaceUsage.scopedLimits[0]
	input.operation == "CREATE"
	near := input.settings.nearLimitPercent
	near > 0
	some limit in input.namespaceUsage.scopedLimits
	limit.afterPercent >= near
	limit.after <= limit.value
	dim := limit.dimension
	input.demand.families[limit.family].effective[dim] > 0
	msg := sprintf("namespace %q: %s will be at %d %% of its limit for the pods in the scopes of ResourceQuota %q after this pod (%d of %d%s)", [
		input.namespace, input.settings.families[limit.family].resourceNames[dim],
		limit.afterPercent, limit.quota, limit.after, limit.value, units[dim],
	])
}

# subject is what is being created: a ResourceClaim (input.claim) or a pod.
subject := "claim" if input.claim.name

else := "pod"

# device_note names, for a memory denial, the containers whose memory is a
# share of a device (a percentage, or the whole device when no memory is set
# or it is 0, as HAMi books it) and what that resolved to, so the user sees
# why a pod without an explicit memory request needs so much.
device_note(demand, "gpumem") := concat("", [note |
	some c in demand.containers
	c.gpumemPercent > 0
	not c.unresolved
	note := sprintf("; container %q takes %s", [c.name, share(c)])
])

device_note(_, dim) := "" if dim != "gpumem"

share(c) := sprintf("the whole device: %d x %d MiB (gpumem unset or 0 books the whole card, as in HAMi)", [c.gpu, c.gpumemPerDevice]) if {
	c.gpumemPercent == 100
} else := sprintf("%d %% of a device: %d x %d MiB", [c.gpumemPercent, c.gpu, c.gpumemPerDevice])

invalid_note(limit) := "; the quota's value is not a whole number, so it blocks until it is fixed" if limit.invalid

else := ""

warn contains msg if {
	input.guard.quiet == false
	input.guard.nearLimit[0]
	input.operation == "CREATE"
	near := input.settings.nearLimitPercent
	near > 0 # 0: never warn
	some family, usage in input.namespaceUsage.families
	some dim, limit in usage.limits
	limit.afterPercent >= near
	a := usage.after[dim]
	a <= limit.value
	input.demand.families[family].effective[dim] > 0
	msg := sprintf("namespace %q: %s will be at %d %% of its limit after this pod (%d of %d%s, ResourceQuota %q)", [
		input.namespace, input.settings.families[family].resourceNames[dim],
		limit.afterPercent, a, limit.value, units[dim], limit.quota,
	])
}

# nativeRequestQuotas[0]: OPA's rule index skips the rule when there is none.
warn contains msg if {
	input.guard.quiet == false
	input.namespaceUsage.nativeRequestQuotas[0]
	some q in input.namespaceUsage.nativeRequestQuotas
	msg := sprintf("namespace %q: ResourceQuota %q sets %s: Kubernetes charges a pod's init-container peak there for the pod's whole life, even after its init containers finish; use limits.%s, which gpuadmit enforces and releases when init containers exit", [
		input.namespace, q.quota, q.key, trim_prefix(q.key, "requests."),
	])
}

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

deny contains msg if {
	input.guard.quiet == false
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
	input.guard.quiet == false
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
