
.
bad'
float32numpy.ndarray"
not a .npy