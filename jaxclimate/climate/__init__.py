"""The climate module of the CICERO-SCM surrogate framework.

* ``cicero``     — CICERO-SCM (``ciceroscm`` 2.1.3) as an offline oracle: configuration, restart
                   snapshot, worker pool (optional ``cicero`` extra).
* ``scenarios``  — the perturbed-SSP2-4.5 emission-scenario generator (paper Eqs. 4–9).
* ``dataset``    — resumable dataset generation (CLI), windows, splits, normalisation.
* ``surrogate``  — GRU / LSTM / TCN surrogate networks (Flax).
* ``fit``        — surrogate training (CLI), resumable, orbax checkpoints.
* ``weights_io`` — shipped weights with normalisation and dataset card.
* ``engines``    — ``ClimateEngine``s: the surrogate (pure JAX) and CICERO-SCM (pure_callback).
* ``modules``    — the climate-module protocol every economy uses; annual engines in multi-year steps.
"""
