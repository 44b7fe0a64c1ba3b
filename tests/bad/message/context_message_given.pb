
	Btrain