# Reads `go test -bench` output of BenchmarkGatekeeper and BenchmarkGpuadmit
# and prints, for each pod count both measured, how many times gpuadmit's
# figures Gatekeeper's are (ns/op, cpu-ns/op, B/op, allocs/op).
/^Benchmark(Gatekeeper|Gpuadmit)\/pods=/ {
	split($1, name, "[/=-]")
	engine = name[1]; n = name[3]
	if (!(n in seen)) { seen[n] = 1; order[++count] = n }
	for (i = 3; i < NF; i++) v[engine, n, $(i + 1)] = $i
}
END {
	split("ns/op cpu-ns/op B/op allocs/op", units, " ")
	for (k = 1; k <= count; k++) {
		n = order[k]; line = ""
		for (u = 1; u <= 4; u++) {
			gk = v["BenchmarkGatekeeper", n, units[u]]; ga = v["BenchmarkGpuadmit", n, units[u]]
			if (gk != "" && ga > 0) line = line sprintf("  %s x%.1f", units[u], gk / ga)
		}
		if (line != "") printf "ratio Gatekeeper/gpuadmit, pods=%s:%s\n", n, line
	}
}
