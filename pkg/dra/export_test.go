package dra

// Options only the tests set: production charges every claim under
// DefaultClaimCostBudget.

// WithClaimCostBudget sets the CEL cost, in the CEL library's runtime cost
// units, one claim's selectors may spend over every device they are
// evaluated on (0: DefaultClaimCostBudget). It is also the runtime cost
// limit of one evaluation when lower than the API server's
// (resourcev1.CELSelectorExpressionMaxCost).
func WithClaimCostBudget(units uint64) ChargerOption {
	return func(c *Charger) {
		if units > 0 {
			c.budget = units
		}
	}
}
