"""Reference trainer launched by the torchrun sbatch job: `python -m gpucluster.train`.

Needs the `train` extra (torch). Nothing in synth, render or the CLI imports this
package, so clusters are synthesized without torch installed. Modules by concern:
settings (command line), schedule, task (your model and data), distributed, data
(sampler cursor), state (RNG, weights digest), checkpoint, signals, loop.
"""
