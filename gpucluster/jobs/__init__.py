"""The sbatch jobs login nodes install for their users: the go/no-go validation jobs and the
import-image job, rendered per compute group (the gate reads their output on the workstation)."""
