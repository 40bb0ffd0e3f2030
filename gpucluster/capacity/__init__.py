"""EC2 Capacity Blocks from the workstation: find offerings, buy, show, wait for, extend.

`offerings` finds and remembers what EC2 offers, `purchase` buys a block or an
extension and writes it into the config, `reservations` reads their state. Facts
about the API: FACTS.md, "Capacity Blocks API"; the rules on sizes and durations:
gpucluster.config.capacity_block_rules.
"""
