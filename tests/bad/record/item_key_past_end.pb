

	abc