package nvmldiscovery

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// InitError reports that nvmlInit failed. After it, no other NVML function
// may be called: the library is in an undefined state (calling into it can
// kill the process), so the error text is built without asking NVML.
type InitError struct {
	// Return is the code nvmlInit (or loading the library) returned.
	Return nvml.Return
}

// Error names NVML, the failure, and what to check on the node.
func (e *InitError) Error() string {
	return fmt.Sprintf("NVML initialisation failed (%s): %s", initReturnName(e.Return), initHint(e.Return))
}

// initReturnName names the codes nvmlInit can return without calling
// nvmlErrorString (which would be an NVML call after a failed Init).
func initReturnName(r nvml.Return) string {
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "ERROR_LIBRARY_NOT_FOUND"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "ERROR_DRIVER_NOT_LOADED"
	case nvml.ERROR_NO_PERMISSION:
		return "ERROR_NO_PERMISSION"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "ERROR_LIB_RM_VERSION_MISMATCH"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "ERROR_FUNCTION_NOT_FOUND"
	case nvml.ERROR_GPU_IS_LOST:
		return "ERROR_GPU_IS_LOST"
	case nvml.ERROR_UNKNOWN:
		return "ERROR_UNKNOWN"
	default:
		return fmt.Sprintf("NVML return code %d", int32(r))
	}
}

func initHint(r nvml.Return) string {
	const common = "is the NVIDIA driver installed on this node (nvidia-smi works on the host)? " +
		"in a container: does the pod run with the NVIDIA container runtime " +
		"(runtimeClassName: nvidia, or nvidia as the default runtime) so that the driver libraries and /dev/nvidia* are mounted?"
	switch r {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "the NVML library libnvidia-ml.so.1 could not be loaded; check: is it on the library path " +
			"(ldconfig -p | grep libnvidia-ml, LD_LIBRARY_PATH, or --nvml-library)? " + common
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "libnvidia-ml was loaded but the NVIDIA kernel driver is not running; check: lsmod | grep nvidia, dmesg, " + common
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to open the GPU device files; check the access rights of /dev/nvidia* and the container's device mounts; " + common
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "the user-space libnvidia-ml does not match the loaded kernel driver (driver upgraded without reboot, or a stale library baked into the image); check: " + common
	default:
		return "check: " + common
	}
}
