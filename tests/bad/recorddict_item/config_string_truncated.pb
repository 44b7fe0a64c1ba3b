

m"
	
k*ab