

bad	
float64