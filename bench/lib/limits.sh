# Shared by the bench scripts that start `svc serve` (sourced, not run): rate limits out of the
# way for every tier, so a load generator measures the service, not its limiter.
BENCH_RATE_LIMITS='{"default":{"minute":1000000000,"hour":1000000000,"day":1000000000,"concurrent":100000},"authenticated":{"minute":1000000000,"hour":1000000000,"day":1000000000,"concurrent":100000},"vip":{"minute":1000000000,"hour":1000000000,"day":1000000000,"concurrent":100000}}'
