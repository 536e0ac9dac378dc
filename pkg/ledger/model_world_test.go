package ledger

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// mutateStatus changes one thing the kubelet reports.
func (m *model) mutateStatus(p *corev1.Pod) *corev1.Pod {
	st := &p.Status
	set := func(list *[]corev1.ContainerStatus, name string, s corev1.ContainerState, last *corev1.ContainerStateTerminated) {
		for i := range *list {
			if (*list)[i].Name == name {
				(*list)[i].State = s
				if last != nil {
					(*list)[i].LastTerminationState = corev1.ContainerState{Terminated: last}
				}
				return
			}
		}
		cs := corev1.ContainerStatus{Name: name, State: s}
		if last != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: last}
		}
		*list = append(*list, cs)
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	term := func(code int32) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	}
	switch k := m.r.IntN(10); {
	case k < 6 && len(p.Spec.InitContainers) > 0:
		name := p.Spec.InitContainers[m.r.IntN(len(p.Spec.InitContainers))].Name
		switch m.r.IntN(6) {
		case 0:
			set(&st.InitContainerStatuses, name, running, nil)
		case 1:
			set(&st.InitContainerStatuses, name, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}, nil)
		case 2, 3:
			set(&st.InitContainerStatuses, name, term(0), nil)
		case 4:
			set(&st.InitContainerStatuses, name, term(1), nil)
		default:
			set(&st.InitContainerStatuses, name, running, &corev1.ContainerStateTerminated{ExitCode: int32(m.r.IntN(2))})
		}
	case k < 8:
		name := p.Spec.Containers[m.r.IntN(len(p.Spec.Containers))].Name
		if m.r.IntN(3) == 0 {
			set(&st.ContainerStatuses, name, term(0), nil)
		} else {
			set(&st.ContainerStatuses, name, running, nil)
		}
		st.Phase = corev1.PodRunning
	case k < 9:
		st.Phase = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}[m.r.IntN(4)]
	default:
		st.InitContainerStatuses, st.ContainerStatuses = nil, nil // sandbox recreated
	}
	return p
}

// bind sets the node and the device assignment of a pending pod (a bound
// pod never moves, and its assignment is HAMi's to write before binding:
// edits after binding are the trust tests' business, TestChargeNeverDrops).
func (m *model) bind(p *corev1.Pod) *corev1.Pod {
	if p.Spec.NodeName != "" {
		return p
	}
	node := modelNodes[m.r.IntN(len(modelNodes))]
	p.Spec.NodeName = node
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	uuids := m.nodeDevs[node]
	if len(uuids) == 0 {
		uuids = []string{"GPU-" + node + "-x"}
	}
	switch m.r.IntN(10) {
	case 0:
		delete(p.Annotations, devices.PodAllocatedAnnotation)
		return p
	case 1:
		p.Annotations[devices.PodAllocatedAnnotation] = "garbage;"
		return p
	}
	var b strings.Builder
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			if len(list[i].Resources.Limits) > 0 && list[i].Resources.Limits.Cpu().IsZero() {
				for range 1 + m.r.IntN(2) {
					fmt.Fprintf(&b, "%s,NVIDIA,%d,%d:", uuids[m.r.IntN(len(uuids))], m.r.IntN(30000), m.r.IntN(101))
				}
			}
			b.WriteByte(';')
		}
	}
	p.Annotations[devices.PodAllocatedAnnotation] = b.String()
	return p
}

// node creates, changes or deletes a node.
func (m *model) node() {
	name := modelNodes[m.r.IntN(len(modelNodes))]
	if old, ok := m.nodes[name]; ok && m.r.IntN(5) == 0 {
		delete(m.nodes, name)
		delete(m.nodeMem, name)
		delete(m.nodeDevs, name)
		delete(m.devMem, name)
		m.nodeH.OnDelete(old)
		return
	}
	var devs []devices.Device
	var maxMem int64
	var ids []string
	mems := map[string]int64{}
	for i := range 1 + m.r.IntN(3) {
		d := dev(fmt.Sprintf("GPU-%s-%d", name, i), []int64{16384, 24576, 81920}[m.r.IntN(3)])
		devs = append(devs, d)
		ids = append(ids, d.UUID)
		maxMem = max(maxMem, d.MemoryMiB)
		mems[d.UUID] = d.MemoryMiB
	}
	ann := map[string]string{}
	switch m.r.IntN(10) {
	case 0:
		ann[devices.NodeDevicesAnnotation] = "not json"
		maxMem, mems = 0, nil
	case 1:
		maxMem, mems = 0, nil
	case 2:
		ann[devices.HAMiNodeRegisterAnnotation], _ = devices.EncodeHAMiNodeRegister(devs)
	case 3: // and a device of 2^50 MiB, above the bound: it sizes nothing (issue 42)
		ann[devices.NodeDevicesAnnotation], _ = devices.EncodeNodeDevices(append(slices.Clone(devs), dev("GPU-"+name+"-huge", 1<<50)))
	default:
		ann[devices.NodeDevicesAnnotation], _ = devices.EncodeNodeDevices(devs)
	}
	n := testnode.Annotated(name, map[string]string{"zone": fmt.Sprint(m.r.IntN(2))}, ann)
	old := m.nodes[name]
	m.nodes[name], m.nodeMem[name], m.nodeDevs[name], m.devMem[name] = n, maxMem, ids, mems
	if old == nil {
		m.nodeH.OnAdd(n, false)
	} else {
		m.nodeH.OnUpdate(old, n)
	}
}

// quota creates, changes or deletes a ResourceQuota.
func (m *model) quota() {
	ns := modelNamespaces[m.r.IntN(len(modelNamespaces))]
	name := fmt.Sprintf("q%d", m.r.IntN(3))
	key := ns + "/" + name
	if old, ok := m.quotas[key]; ok && m.r.IntN(3) == 0 {
		delete(m.quotas, key)
		if m.r.IntN(2) == 0 {
			m.quotaH.OnDelete(old)
		} else {
			m.quotaH.OnDelete(toolscache.DeletedFinalStateUnknown{Key: key, Obj: old})
		}
		return
	}
	hard := map[string]string{}
	for _, k := range []string{"limits.nvidia.com/gpu", "limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores", "requests.nvidia.com/gpu",
		"limits." + string(ascendCount), "limits." + string(ascendMem), "limits." + string(ascendCores), "requests." + string(ascendMem)} {
		switch m.r.IntN(4) {
		case 0:
			hard[k] = fmt.Sprint(m.r.IntN(100000))
		case 1:
			hard[k] = []string{"0", "1.5", "100m", "24Gi", "1536Mi"}[m.r.IntN(5)]
		}
	}
	q := testquota.New(ns, name, hard)
	m.quotas[key] = q
	m.quotaH.OnAdd(q, false)
}

// reserve replaces the reservations handed in for a namespace, as a read of
// its GPUUsage object does: UIDs of pods about to be created, of pods the
// ledger knows (never counted twice), and of pods that never come.
func (m *model) reserve() {
	ns := modelNamespaces[m.r.IntN(len(modelNamespaces))]
	var rs []reservation.Reservation
	for range m.r.IntN(4) {
		uid := types.UID(fmt.Sprintf("u%d", m.next+1+m.r.IntN(3)))
		switch m.r.IntN(3) {
		case 0:
			uid = types.UID(fmt.Sprintf("never-%d", m.r.IntN(1000)))
		case 1:
			if p := m.pick(); p != nil {
				uid = p.UID
			}
		}
		var demand effective.Usage
		switch m.r.IntN(4) {
		case 0:
			demand = effective.UsageOf(ascendName, vec(1, int64(m.r.IntN(20000)), 0))
		case 1:
			demand = effective.Usage{nvidia: vec(1, int64(m.r.IntN(20000)), 0), ascendName: vec(2, int64(1+m.r.IntN(20000)), 0)}
		default:
			demand = effective.UsageOf(nvidia, vec(1, int64(m.r.IntN(20000)), 0))
		}
		rs = append(rs, reservation.Reservation{UID: uid, Name: fmt.Sprintf("p%d", m.r.IntN(16)), Demand: demand, Unconfirmed: m.r.IntN(2) == 0})
	}
	m.pending[ns] = rs
}

// counts reports whether a reservation handed in for ns counts at all:
// the watch has not delivered a GPU pod of its UID (that it has not seen
// go).
func (m *model) counts(r reservation.Reservation) bool { return !m.seen[r.UID] }

// holder returns the charge of the recorded (or invalid: nothing) pod of
// another UID that holds r's name in ns, if there is one.
func (m *model) holder(ns string, r reservation.Reservation) (effective.Usage, bool) {
	for _, p := range m.pods {
		if p.Namespace == ns && p.Name == r.Name && p.UID != r.UID {
			switch d := m.oracle(p); {
			case d.rec != nil:
				return d.rec.used, true
			case d.invalid != nil:
				return nil, true
			}
			return nil, false
		}
	}
	return nil, false
}

// oracle derives a pod's record from the object and the world's nodes, as
// the ledger resolves it (sizeOf).
func (m *model) oracle(p *corev1.Pod) derivation {
	opt := effective.Options{DeviceMemoryMiB: m.sizeOf(p)}
	key := memoKey{p, fmt.Sprint(opt.DeviceMemoryMiB, opt.AssignedMemoryMiB)}
	if d, ok := m.memo[key]; ok {
		return d
	}
	if len(m.memo) > 100_000 {
		clear(m.memo)
	}
	d := m.l.derive(p, map[string]effective.Options{"nvidia": opt}) // pure: reads nothing of the ledger's state
	m.memo[key] = d
	return d
}

// sizeOf is the size the ledger resolves p's percentages and whole devices
// against: once bound, the largest device its own node announced since
// binding; pending (or bound to a node that never announced a device),
// what its admission resolved: the largest device of the nodes whose zone
// label its selector admits, first resolved.
func (m *model) sizeOf(p *corev1.Pod) int64 {
	if p.Spec.NodeName != "" {
		if size := max(m.nodeSize[p.UID], m.nodeMem[p.Spec.NodeName]); size > 0 {
			return size
		}
	}
	if size := m.floor[p.UID]; size > 0 {
		return size
	}
	return m.eligibleMax(p)
}

// resolvedNow is the size a ledger that never saw p before resolves it
// against: its own node's largest device once bound (when it announces
// one), else the largest of the nodes its selector admits.
func (m *model) resolvedNow(p *corev1.Pod) int64 {
	if p.Spec.NodeName != "" && m.nodeMem[p.Spec.NodeName] > 0 {
		return m.nodeMem[p.Spec.NodeName]
	}
	return m.eligibleMax(p)
}

// eligibleMax is the largest device of the nodes p's selector admits.
func (m *model) eligibleMax(p *corev1.Pod) int64 {
	var most int64
	for name, n := range m.nodes {
		if zone, ok := p.Spec.NodeSelector["zone"]; !ok || n.Labels["zone"] == zone {
			most = max(most, m.nodeMem[name])
		}
	}
	return most
}

// settleFloors notes, after a step, what each recorded pod's admission
// resolved (while pending, or bound to a node that never announced a
// device) and the largest device its own node announced since binding (a
// charge never resolves below it: node capacity that drops later does not
// lower it); a pod without a record forgets both.
func (m *model) settleFloors() {
	for uid, p := range m.pods {
		if m.oracle(p).rec == nil {
			delete(m.floor, uid)
			delete(m.nodeSize, uid)
			continue
		}
		if p.Spec.NodeName != "" {
			m.nodeSize[uid] = max(m.nodeSize[uid], m.nodeMem[p.Spec.NodeName])
			if m.nodeSize[uid] > 0 {
				continue
			}
		}
		if m.floor[uid] == 0 {
			m.floor[uid] = m.eligibleMax(p)
		}
	}
	for uid := range m.floor {
		if m.pods[uid] == nil {
			delete(m.floor, uid)
		}
	}
	for uid := range m.nodeSize {
		if m.pods[uid] == nil {
			delete(m.nodeSize, uid)
		}
	}
}

// held lists the namespaces with a pod charged otherwise than a ledger
// rebuilt from the objects charges it: above what the nodes now resolve it
// to (true: the rebuilt ledger charges less: its node announced less since
// binding, or the nodes a pending pod may run on did), or below (false: a
// pending pod kept its first size; the rebuilt ledger resolves it afresh,
// as an admission now would).
func (m *model) held() map[string]bool {
	out := map[string]bool{}
	for _, p := range m.pods {
		d := m.oracle(p)
		if d.rec == nil || d.rec.pod == nil {
			continue
		}
		// A bound pod whose node now announces less than it did since binding
		// is reported by the ledger that saw it (a charge problem), whatever
		// a rebuilt ledger resolves it to.
		dropped := p.Spec.NodeName != "" && m.nodeSize[p.UID] > m.nodeMem[p.Spec.NodeName]
		switch size, now := m.sizeOf(p), m.resolvedNow(p); {
		case size < now:
			out[p.Namespace] = false
		case (size > now || dropped) && !hasKey(out, p.Namespace):
			out[p.Namespace] = true
		}
	}
	return out
}

func hasKey(m map[string]bool, k string) bool {
	_, ok := m[k]
	return ok
}
