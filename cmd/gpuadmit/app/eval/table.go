package eval

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// printEval writes `eval -o table`: a row per object (the demand of one of
// its pods, how many of its pods would be admitted), then its denials and
// warnings; wide adds the number of each.
func printEval(w io.Writer, out Objects, wide bool) error {
	t := output.NewTable(w)
	byFamily := false
	for _, o := range out.Objects {
		byFamily = byFamily || len(o.Families) > 0
	}
	header := "KIND\tNAMESPACE\tNAME\tALLOWED\tADMITTED\tGPU\tGPUMEM(MiB)\tGPUCORES"
	if byFamily {
		header = "KIND\tNAMESPACE\tNAME\tALLOWED\tADMITTED\tFAMILY\tGPU\tGPUMEM(MiB)\tGPUCORES"
	}
	if wide {
		header += "\tDENIALS\tWARNINGS"
	}
	fmt.Fprintln(t, header)
	for _, o := range out.Objects {
		object := fmt.Sprintf("%s\t%s\t%s\t%t\t%d/%d", o.Kind, o.evaluatedIn, o.Name, o.Allowed, o.Admitted, max(o.Replicas, 0))
		extra := ""
		if wide {
			extra = fmt.Sprintf("\t%d\t%d", len(o.Denials), len(o.Warnings))
		}
		if !byFamily {
			fmt.Fprintf(t, "%s\t%s%s\n", object, output.DemandCells(o.Effective), extra)
			continue
		}
		if len(o.Families) == 0 || !o.Effective.IsZero() {
			fmt.Fprintf(t, "%s\t%s\t%s%s\n", object, output.OrDash(out.primary), output.DemandCells(o.Effective), extra)
		}
		for _, f := range slices.Sorted(maps.Keys(o.Families)) {
			fmt.Fprintf(t, "%s\t%s\t%s%s\n", object, f, output.DemandCells(o.Families[f].Effective), extra)
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	return output.PrintNotes(w, evalNotes(out))
}

// evalNotes are the lines under `eval -o table`'s rows: each object's
// denials and warnings, then the explanations.
func evalNotes(out Objects) []string {
	var notes []string
	for _, o := range out.Objects {
		for _, d := range o.Denials {
			notes = append(notes, fmt.Sprintf("%s %s/%s denied: %s", o.Kind, o.evaluatedIn, o.Name, d))
		}
		for _, m := range o.Warnings {
			notes = append(notes, fmt.Sprintf("%s %s/%s warning: %s", o.Kind, o.evaluatedIn, o.Name, m))
		}
	}
	for _, o := range out.Objects {
		if o.Explanation != nil {
			notes = append(notes, fmt.Sprintf("%s %s/%s explained:", o.Kind, o.evaluatedIn, o.Name))
			notes = append(notes, explanationLines(o.Explanation, subjectOf(o.Kind))...)
		}
	}
	return notes
}

// subjectOf is what the explanation calls an object of kind: a claim, or
// (for the pods of every other kind) a pod.
func subjectOf(kind string) string {
	if kind == "ResourceClaim" {
		return "claim"
	}
	return "pod"
}

// explanationLines says, for each message, the rule that produced it and
// the rules that passed it on, then each limit against the usage after
// the pod (or claim: subject).
func explanationLines(x *decision.Explanation, subject string) []string {
	var lines []string
	for _, m := range []struct {
		what string
		msgs []decision.Explained
	}{{"denied", x.Denials}, {"warning", x.Warnings}} {
		for _, e := range m.msgs {
			lines = append(lines, fmt.Sprintf("  %s: %s", m.what, e.Message))
			for i, r := range e.Rules {
				how := "by "
				if i > 0 {
					how = "via"
				}
				lines = append(lines, fmt.Sprintf("    %s %s at %s:%d", how, r.Rule, r.File, r.Line))
			}
		}
	}
	for _, l := range x.Limits {
		verdict := "within the limit"
		if l.Exceeded {
			verdict = "EXCEEDED"
		}
		lines = append(lines, fmt.Sprintf("  limit %s: %d used + %d reserved + %d this %s = %d of %d (ResourceQuota %q %s): %s",
			l.Resource, l.Used, l.Reserved, l.Pod, subject, l.After, l.Limit, l.Quota, l.Key, verdict))
	}
	if len(x.Limits) == 0 {
		lines = append(lines, "  no ResourceQuota limits a managed resource in this namespace")
	}
	return lines
}
