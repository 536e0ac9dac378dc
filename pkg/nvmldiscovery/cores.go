package nvmldiscovery

// CoresPerSM is the number of CUDA cores per streaming multiprocessor for a
// compute capability (the table of CUDA's samples, helper_cuda.h), 0 when
// unknown. It turns NVML's CUDA core count into an SM count.
func CoresPerSM(major, minor int) int {
	switch major {
	case 5:
		return 128
	case 6:
		if minor == 0 {
			return 64
		}
		return 128
	case 7:
		return 64
	case 8:
		if minor == 0 {
			return 64
		}
		return 128
	case 9, 10, 11, 12:
		return 128
	}
	return 0
}
