package source

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// loadState reads a cluster dump ('kubectl get -o yaml' of Pods, Nodes,
// ResourceQuotas, ...) and builds the usage ledger from it, its team
// quotas (GPUClusterQuotas) fed, and reads its budgets.
func loadState(path string, stdin io.Reader, ch Charging, log logr.Logger) (*ledger.Ledger, read, error) {
	stdin, seen := cmdline.TeeStdin([]string{path}, stdin)
	objs, err := manifest.ReadFiles([]string{path}, false, stdin) // a file, or a directory's
	if err != nil {
		return nil, read{}, err
	}
	if len(objs.Pods)+len(objs.Nodes)+len(objs.Quotas)+len(objs.Namespaces)+
		len(objs.Claims)+len(objs.ClaimTemplates)+len(objs.Slices)+len(objs.DeviceClasses) == 0 {
		return nil, read{}, fmt.Errorf("%s: no Pod, Node, ResourceQuota, Namespace, ResourceClaim, ResourceClaimTemplate, ResourceSlice or DeviceClass found (%d other objects)%s",
			path, objs.Skipped, cmdline.KindsHint([]string{path}, seen.Bytes()))
	}
	teams, err := clusterstate.TeamsIn(objs)
	if err != nil {
		return nil, read{}, err
	}
	budgets, err := clusterstate.BudgetsIn(objs)
	if err != nil {
		return nil, read{}, err
	}
	l := LedgerOf(objs, ch, log)
	teams.Feed(l)
	return l, read{teams: teams, budgets: budgets, objects: objs}, nil
}
