package gpuadmit.builtin_test

import data.gpuadmit.builtin

# hour is one device-hour in unit-milliseconds.
hour := 3600000

# gb is an entry of input.budgets: GPUBudget "ml-hours" of team-a, 1
# nvidia.com/gpu-hour a month, with used device-ms used, for a pod of one
# GPU without a deadline.
gb := {
	"kind": "GPUBudget", "name": "ml-hours", "namespace": "team-a", "resource": "nvidia.com/gpu",
	"window": "Monthly Europe/Berlin", "rolling": false, "windowEnd": "2027-01-01T00:00:00+01:00",
	"hard": hour, "used": 0, "percent": 0, "hardHours": "1", "usedHours": "0", "leftHours": "1",
	"demand": 1, "activeDeadlineSeconds": -1, "maxBurn": -1, "maxBurnHours": "", "warnPercent": 0,
}

with_budgets(inp, bs) := object.union(inp, {"budgets": bs, "budgetProblems": []})

spent_msg := `namespace "team-a": GPUBudget "ml-hours" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`

test_budget_spent_denies_naming_budget_use_and_window_end if {
	b := object.union(gb, {"used": hour, "percent": 100, "usedHours": "1", "leftHours": "0", "warnPercent": 95})
	builtin.deny == {spent_msg} with input as with_budgets(fits, [b])

	# a spent budget does not also warn
	count(builtin.warn) == 0 with input as with_budgets(fits, [b])
}

test_budget_overrun_denies if {
	# running pods took the budget past hard: still spent.
	b := object.union(gb, {"used": 2 * hour, "percent": 200, "usedHours": "2", "leftHours": "0", "warnPercent": 95})
	builtin.deny == {`namespace "team-a": GPUBudget "ml-hours" is spent: 2 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`} with input as with_budgets(fits, [b])
}

test_budget_one_ms_short_of_spent_allowed if {
	b := object.union(gb, {"used": hour - 1, "percent": 99, "usedHours": "0.99", "leftHours": "0", "warnPercent": 95})
	count(builtin.deny) == 0 with input as with_budgets(fits, [b])
	builtin.warn == {`namespace "team-a": GPUBudget "ml-hours" has used 99 % of its nvidia.com/gpu-hours (0.99 of 1, 0 left until 2027-01-01T00:00:00+01:00)`} with input as with_budgets(fits, [b])
}

test_budget_zero_hard_denies if {
	b := object.union(gb, {"hard": 0, "percent": 100, "hardHours": "0", "leftHours": "0"})
	builtin.deny == {`namespace "team-a": GPUBudget "ml-hours" is spent: 0 of 0 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`} with input as with_budgets(fits, [b])
}

test_budget_no_demand_never_denies if {
	# the decision lists only resources the request burns; a hand-written
	# entry with no demand is still not held against it.
	b := object.union(gb, {"used": hour, "demand": 0, "warnPercent": 95, "percent": 100})
	count(builtin.deny) == 0 with input as with_budgets(fits, [b])
	count(builtin.warn) == 0 with input as with_budgets(fits, [b])
}

test_budget_only_on_create if {
	b := object.union(gb, {"used": hour, "percent": 100})
	count(builtin.deny) == 0 with input as object.union(with_budgets(fits, [b]), {"operation": "UPDATE"})
}

test_budget_warn_thresholds if {
	b80 := object.union(gb, {"used": 2880000, "percent": 80, "usedHours": "0.8", "leftHours": "0.2", "warnPercent": 80})
	builtin.warn == {`namespace "team-a": GPUBudget "ml-hours" has used 80 % of its nvidia.com/gpu-hours (0.8 of 1, 0.2 left until 2027-01-01T00:00:00+01:00)`} with input as with_budgets(fits, [b80])
	b79 := object.union(gb, {"used": 2879999, "percent": 79, "usedHours": "0.79", "leftHours": "0.2"})
	count(builtin.warn) == 0 with input as with_budgets(fits, [b79])
	count(builtin.deny) == 0 with input as with_budgets(fits, [b80])
}

test_budget_deadline_past_what_is_left_denied_up_front if {
	# 0.5 h left; activeDeadlineSeconds 7200 with 1 GPU can burn 2 h.
	b := object.union(gb, {
		"hard": 2 * hour, "used": hour + hour / 2, "percent": 75, "hardHours": "2", "usedHours": "1.5", "leftHours": "0.5",
		"activeDeadlineSeconds": 7200, "maxBurn": 2 * hour, "maxBurnHours": "2",
	})
	builtin.deny == {`namespace "team-a": activeDeadlineSeconds 7200 lets this pod burn up to 2 nvidia.com/gpu-hours, GPUBudget "ml-hours" has 0.5 left until 2027-01-01T00:00:00+01:00`} with input as with_budgets(fits, [b])
}

test_budget_deadline_exactly_what_is_left_allowed if {
	b := object.union(gb, {
		"hard": 2 * hour, "used": hour + hour / 2, "percent": 75, "leftHours": "0.5",
		"activeDeadlineSeconds": 1800, "maxBurn": hour / 2, "maxBurnHours": "0.5",
	})
	count(builtin.deny) == 0 with input as with_budgets(fits, [b])
}

test_cluster_budget_and_rolling_window if {
	b := object.union(gb, {
		"kind": "GPUClusterBudget", "name": "ml", "namespace": "", "window": "rolling 720h0m0s", "rolling": true,
		"used": hour, "percent": 100, "usedHours": "1", "leftHours": "0",
	})
	builtin.deny == {`namespace "team-a": GPUClusterBudget "ml" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until enough of its burn leaves the rolling 720h0m0s window`} with input as with_budgets(fits, [b])
}

test_every_budget_reported if {
	# a pod must fit every budget (and every quota): each one passed is
	# named.
	spent := object.union(gb, {"used": hour, "percent": 100, "usedHours": "1", "leftHours": "0"})
	team := object.union(spent, {"kind": "GPUClusterBudget", "name": "ml", "namespace": ""})
	inp := with_budgets(base, [spent, team])
	builtin.deny[spent_msg] with input as inp
	builtin.deny[`namespace "team-a": GPUClusterBudget "ml" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`] with input as inp
}

test_claim_named_as_claim if {
	b := object.union(gb, {"used": hour, "percent": 100, "usedHours": "1", "leftHours": "0"})
	inp := object.union(with_budgets(fits, [b]), {"claim": {"name": "c", "deviceClassNames": ["gpu.nvidia.com"]}})
	builtin.deny == {`namespace "team-a": GPUBudget "ml-hours" is spent: 1 of 1 nvidia.com/gpu-hours used; no new claim using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`} with input as inp
}

test_budget_problem_warns if {
	inp := object.union(fits, {"budgets": [], "budgetProblems": [{
		"kind": "GPUBudget", "name": "ml-hours", "namespace": "team-a",
		"problem": `spec.hard: "example.com/fpga" is not a resource gpuadmit governs`,
	}]})
	builtin.warn == {`namespace "team-a": GPUBudget "ml-hours" is not enforced in part: spec.hard: "example.com/fpga" is not a resource gpuadmit governs`} with input as inp
	count(builtin.deny) == 0 with input as inp
}
