
2ab