

bad
float64
ÿÿÿÿÿÿÿÿ