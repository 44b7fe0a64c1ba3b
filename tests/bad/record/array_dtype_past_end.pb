

w
	float