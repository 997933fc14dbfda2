// Placeholder until the benchmark tool lands.
print("chorus-bench")
