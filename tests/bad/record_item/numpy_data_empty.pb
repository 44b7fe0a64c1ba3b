
"
bad
float32numpy.ndarray