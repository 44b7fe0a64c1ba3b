# SPDX-License-Identifier: Apache-2.0
"""A small Flower app: a NumPy MLP trained with FedAvg (see pyproject.toml)."""
