# GPU-hour budgets
# A GPUBudget (one namespace) or GPUClusterBudget (a team's namespaces)
# limits what pods and claims burn over a window, in resource-hours. The
# input lists one entry per budget counting the namespace and resource the
# pod or claim burns (budgets), with what the window has used so far (used,
# hard and maxBurn in unit-milliseconds; their hours preformatted for the
# messages). A new pod or claim is denied once a budget is spent, and a pod
# whose activeDeadlineSeconds lets it burn past what is left is denied up
# front; warnings at the configured thresholds (settings of the budgets
# section: each entry's warnPercent is the highest one reached). Running
# pods are never stopped. budgets[0]: OPA's rule index skips the rules
# when no budget counts the namespace.
package gpuadmit.builtin

# Every deny and warn rule starts with input.guard.quiet == false: the
# input sets quiet only when every list the built-in rules start from is
# empty, so that OPA's rule index skips all of them with one lookup when
# none can fire (docs/policy-input.md, guard).

deny contains msg if {
	input.guard.quiet == false
	input.budgets[0]
	input.operation == "CREATE"
	some b in input.budgets
	b.demand > 0
	b.used >= b.hard
	msg := sprintf("namespace %q: %s is spent: %s of %s %s-hours used; no new %s using %s is admitted %s", [
		input.namespace, budget_name(b), b.usedHours, b.hardHours, b.resource, budget_subject, b.resource, budget_until(b),
	])
}

deny contains msg if {
	input.guard.quiet == false
	input.budgets[0]
	input.operation == "CREATE"
	some b in input.budgets
	b.demand > 0
	b.maxBurn >= 0
	b.used < b.hard
	b.used + b.maxBurn > b.hard
	msg := sprintf("namespace %q: activeDeadlineSeconds %d lets this pod burn up to %s %s-hours, %s has %s left %s", [
		input.namespace, b.activeDeadlineSeconds, b.maxBurnHours, b.resource, budget_name(b), b.leftHours, budget_until(b),
	])
}

warn contains msg if {
	input.guard.quiet == false
	input.budgets[0]
	input.operation == "CREATE"
	some b in input.budgets
	b.demand > 0
	b.warnPercent > 0
	b.used < b.hard
	not over_deadline(b)
	msg := sprintf("namespace %q: %s has used %d %% of its %s-hours (%s of %s, %s left %s)", [
		input.namespace, budget_name(b), b.percent, b.resource, b.usedHours, b.hardHours, b.leftHours, budget_until(b),
	])
}

# A budget key or window that cannot be enforced is reported on every
# admission in the namespace (and in the budget's Valid condition): it is
# never silently ignored.
warn contains msg if {
	input.guard.quiet == false
	input.budgetProblems[0]
	input.operation == "CREATE"
	some p in input.budgetProblems
	msg := sprintf("namespace %q: %s is not enforced in part: %s", [input.namespace, budget_name(p), p.problem])
}

over_deadline(b) if {
	b.maxBurn >= 0
	b.used + b.maxBurn > b.hard
}

# budget_subject is what is being created (this file stands alone: a
# policy set may replace limits.rego and keep it).
budget_subject := "claim" if input.claim.name

else := "pod"

# budget_name is `GPUBudget "ml-hours"` or `GPUClusterBudget "ml"`.
budget_name(b) := sprintf("%s %q", [b.kind, b.name])

# budget_until says when the budget frees up: a calendar window at its
# end; a rolling one as its old burn leaves the window.
budget_until(b) := sprintf("until %s", [b.windowEnd]) if not b.rolling

else := sprintf("until enough of its burn leaves the %s window", [b.window])
