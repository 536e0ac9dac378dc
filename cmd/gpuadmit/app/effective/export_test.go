package effective

import (
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// effectiveOf computes the effective demand of one pod of w in each family
// of fams (the first at the first level of the output, whether the pod asks
// for it or not), as `gpuadmit effective` prints it; invalid values are
// named as the manifest wrote them. devMem resolves the first family's
// memory percentages and whole devices only.
func effectiveOf(w *manifest.Workload, fams []effective.Family, devMem int64) (effectiveOutput, error) {
	ds, err := podDemands(w, fams, devMem)
	if err != nil {
		return effectiveOutput{}, err
	}
	return effectiveReport(ds, fams[0].Name), nil
}
