"""What the compiled core asks of the array libraries it does not link against."""


def cuda_stream(array, device_id):
    """The CUDA stream (a CUstream as an int, 0 for the default stream) that hpipe runs a call on
    whose arrays are CUDA arrays of `array`'s library: that library's current stream, which
    must belong to the arrays' device."""
    library = type(array).__module__.split(".")[0]
    if library == "torch":
        import torch

        current = torch.cuda.current_device()
        # The raw stream, as torch's own compiled kernels ask for it: current_stream() builds a
        # Stream object (several us, a large part of a small call).
        raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        stream = raw_stream(device_id) if raw_stream else torch.cuda.current_stream(device_id).cuda_stream
    elif library == "cupy":
        import cupy

        current = cupy.cuda.runtime.getDevice()
        stream = cupy.cuda.get_current_stream().ptr
    else:
        return 0
    if current != device_id:
        raise TypeError(
            f"hpipe: the arrays are on CUDA device {device_id} but the current device is {current}; "
            f"call hpipe within the library's device context for device {device_id}"
        )
    return stream
