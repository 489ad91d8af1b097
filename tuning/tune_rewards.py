"""Optuna study over the reward weights (RewardWeights, and with --curriculum an easier first phase), judged by the mean
competition score on the config's held-out games (never the shaped reward).

    python tuning/tune_rewards.py --config configs/realm/ppo.yaml --n-trials 50 [--storage URL] [--study-name S]
                             [--workers K] [--set key=value ...] [--out DIR] [--pruner median|wilcoxon|halving|none]

`python tuning/tune_rewards.py --help` lists every option; docs/tuning.md shows storages,
several workers and machines, and replaying a trial with `sb3-realm train --from-study URL STUDY [--trial N]`.
"""

import sys

from sb3_realm.tuning.script import main

if __name__ == "__main__":  # worker processes (forkserver) import this file without running a study
    sys.exit(main("rewards"))
