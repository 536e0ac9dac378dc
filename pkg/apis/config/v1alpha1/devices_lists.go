package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The typed keys of each section (devices.go decodes them).

func (n *NvidiaDevices) fields() fields {
	return fields{
		"resourceCountName": &n.ResourceCountName, "resourceMemoryName": &n.ResourceMemoryName,
		"resourceMemoryPercentageName": &n.ResourceMemoryPercentageName, "resourceCoreName": &n.ResourceCoreName,
		"defaultMemory": &n.DefaultMemory, "defaultCores": &n.DefaultCores, "defaultGPUNum": &n.DefaultGPUNum,
		"memoryFactor": &n.MemoryFactor, "exclusiveCores": &n.ExclusiveCores,
	}
}

func (n *NamedDevices) fields() fields {
	return fields{"resourceCountName": &n.ResourceCountName, "resourceMemoryName": &n.ResourceMemoryName,
		"resourceCoreName": &n.ResourceCoreName}
}

func (h *HygonDevices) fields() fields {
	return fields{"resourceCountName": &h.ResourceCountName, "resourceMemoryName": &h.ResourceMemoryName,
		"resourceCoreName": &h.ResourceCoreName, "memoryFactor": &h.MemoryFactor}
}

func (c *CountDevices) fields() fields { return fields{"resourceCountName": &c.ResourceCountName} }

func (m *MetaxDevices) fields() fields {
	return fields{"resourceCountName": &m.ResourceCountName, "resourceVCountName": &m.ResourceVCountName,
		"resourceVMemoryName": &m.ResourceVMemoryName, "resourceVCoreName": &m.ResourceVCoreName}
}

func (e *EnflameDevices) fields() fields {
	return fields{"resourceNameGCU": &e.ResourceNameGCU, "resourceNameDRSGCU": &e.ResourceNameDRSGCU,
		"resourceNameGCUMemory": &e.ResourceNameGCUMemory, "resourceNameGCUCore": &e.ResourceNameGCUCore}
}

func (k *KunlunDevices) fields() fields {
	return fields{"resourceCountName": &k.ResourceCountName, "resourceVCountName": &k.ResourceVCountName,
		"resourceVMemoryName": &k.ResourceVMemoryName}
}

func (a *AWSNeuronDevices) fields() fields {
	return fields{"resourceCountName": &a.ResourceCountName, "resourceCoreName": &a.ResourceCoreName}
}

func (b *BackendSwitch) fields() fields { return fields{"enabled": &b.Enabled} }

func (i *IluvatarDevices) fields() fields {
	return fields{"chipName": &i.ChipName, "commonWord": &i.CommonWord, "resourceCountName": &i.ResourceCountName,
		"resourceMemoryName": &i.ResourceMemoryName, "resourceCoreName": &i.ResourceCoreName}
}

func (v *VNPUConfig) fields() fields {
	return fields{"chipName": &v.ChipName, "commonWord": &v.CommonWord, "resourceName": &v.ResourceName,
		"resourceMemoryName": &v.ResourceMemoryName, "resourceCoreName": &v.ResourceCoreName,
		"memoryAllocatable": &v.MemoryAllocatable, "memoryCapacity": &v.MemoryCapacity, "memoryFactor": &v.MemoryFactor,
		"aiCore": &v.AICore, "aiCPU": &v.AICPU, "superPod": &v.SuperPod}
}

func (t *VNPUTemplate) fields() fields {
	return fields{"name": &t.Name, "memory": &t.Memory, "aiCore": &t.AICore, "aiCPU": &t.AICPU}
}

// iluvatars decodes HAMi's iluvatars list.
func (dec *decoder) iluvatars(raw json.RawMessage, path string) ([]IluvatarDevices, error) {
	items, err := list(raw, path)
	if err != nil {
		return nil, err
	}
	out := make([]IluvatarDevices, len(items))
	for i, item := range items {
		m, p, err := entry(item, path, i)
		if err != nil {
			return nil, err
		}
		if err := dec.keysOf(m, p, out[i].fields()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// vnpus decodes HAMi's vnpus section: a mapping whose configs list holds
// the chips (its other keys, hamiVnpuCore, ignored), or the list alone.
func (dec *decoder) vnpus(raw json.RawMessage, path string) ([]VNPUConfig, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '[' {
		m, err := object(raw, path)
		if err != nil {
			return nil, fmt.Errorf("%s: want a mapping with a configs list (or the list)", path)
		}
		for _, key := range sortedKeys(m) {
			if key == "configs" {
				continue
			}
			if err := misspelt(join(path, key), key, []string{"configs"}); err != nil {
				return nil, err
			}
			dec.ignore(join(path, key))
		}
		raw = m["configs"]
		if raw == nil {
			return []VNPUConfig{}, nil
		}
	}
	items, err := list(raw, path)
	if err != nil {
		return nil, err
	}
	out := make([]VNPUConfig, len(items))
	for i, item := range items {
		if err := dec.vnpu(item, path, i, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// vnpu decodes one chip of vnpus and its templates.
func (dec *decoder) vnpu(item json.RawMessage, path string, i int, out *VNPUConfig) error {
	m, p, err := entry(item, path, i)
	if err != nil {
		return err
	}
	rawTemplates, has := m["templates"]
	delete(m, "templates")
	if err := dec.keysOf(m, p, out.fields()); err != nil {
		return err
	}
	if !has {
		return nil
	}
	items, err := list(rawTemplates, p+".templates")
	if err != nil {
		return err
	}
	out.Templates = make([]VNPUTemplate, len(items))
	for j, t := range items {
		tp := fmt.Sprintf("%s.templates[%d]", p, j)
		if err := dec.keys(t, tp, out.Templates[j].fields()); err != nil {
			return err
		}
	}
	return nil
}

// list reads a sequence; null is an empty one.
func list(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: want a list", path)
	}
	return items, nil
}

// entry reads the i-th entry of the list at path, and the path it is named
// by: path[chipName], or path[i] without a chip name.
func entry(item json.RawMessage, path string, i int) (map[string]json.RawMessage, string, error) {
	p := fmt.Sprintf("%s[%d]", path, i)
	m, err := object(item, p)
	if err != nil {
		return nil, "", err
	}
	var chip string
	if raw, ok := m["chipName"]; ok && json.Unmarshal(raw, &chip) == nil && chip != "" {
		p = path + "[" + chip + "]"
	}
	return m, p, nil
}
