package workload

// TemplateAt is a pod template found in a decoded object: where it is (as
// PodSet.Name says it) and the template object itself, a map of the
// object (writing to it writes the object).
type TemplateAt struct {
	Where    string
	Template map[string]any
}

// TemplateObjects returns every pod template of obj (decoded by Decode) at
// the kind's template paths, and at a template's fallback path where its
// path matches nothing, each once; a value there that is not an object is
// left out.
func (k *Kind) TemplateObjects(obj map[string]any) []TemplateAt {
	var out []TemplateAt
	seen := map[string]bool{}
	for i := range k.Templates {
		t := &k.Templates[i]
		ms := t.Path.find(obj)
		if len(ms) == 0 && !t.Fallback.IsZero() {
			ms = t.Fallback.find(obj)
		}
		for _, m := range ms {
			tmpl, ok := m.value.(map[string]any)
			if !ok || seen[m.where] {
				continue
			}
			seen[m.where] = true
			out = append(out, TemplateAt{Where: m.where, Template: tmpl})
		}
	}
	return out
}
