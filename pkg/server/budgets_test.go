package server

import (
	"testing"

	toolscache "k8s.io/client-go/tools/cache"
)

// syncedInformer is an informer whose store holds its initial list
// (HasSynced) while the handler it was given has not delivered it yet.
type syncedInformer struct{ delivered *bool }

func (i syncedInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return registration{delivered: i.delivered}, nil
}

func (syncedInformer) HasSynced() bool { return true }

// registration is the handler's; only HasSynced is asked.
type registration struct {
	toolscache.ResourceEventHandlerRegistration
	delivered *bool
}

func (r registration) HasSynced() bool { return *r.delivered }

// TestBudgetsSyncedWaitsForTheHandler attacks the startup window: the
// informer reports synced once its store holds the budgets, before the
// tracker's handler has received them; a replica that opened admission
// then would decide with no budget. BudgetsSynced must wait for the
// handler's registration.
func TestBudgetsSyncedWaitsForTheHandler(t *testing.T) {
	gb, gcb := false, false
	synced, err := registerBudgetHandlers(toolscache.ResourceEventHandlerFuncs{},
		map[string]handlerSource{"GPUBudget": syncedInformer{&gb}, "GPUClusterBudget": syncedInformer{&gcb}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{budgetsSynced: synced}
	if s.BudgetsSynced() {
		t.Fatal("BudgetsSynced before the tracker's handlers delivered the initial lists")
	}
	gb = true
	if s.BudgetsSynced() {
		t.Fatal("BudgetsSynced before the GPUClusterBudgets' handler delivered its initial list")
	}
	gcb = true
	if !s.BudgetsSynced() {
		t.Fatal("BudgetsSynced false once both handlers delivered their lists")
	}
}
