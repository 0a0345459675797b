"""Failures found by the cargo-fuzz targets (fuzz/fuzz_targets/), as the Python user meets them."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.errors import InvalidLabelsError


@pytest.mark.parametrize("bad", [7, 3, -1])
@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("cc", [True, False])
def test_out_of_range_label_with_a_dropping_threshold_is_a_labels_error(bad, binning, cc):
    # A threshold that drops most entries sends all-probability metrics down the compacting
    # path, which used an unchecked label as an index: PanicException instead of an error.
    probs = np.tile([0.4, 0.3, 0.3], (8, 1))
    labels = np.zeros(8, dtype=np.int64)
    labels[7] = bad
    with pytest.raises(InvalidLabelsError, match=r"labels\[7\]"):
        calibkit.gce(labels, probs, binning=binning, max_prob=False, class_conditional=cc,
                     threshold=0.5)
    with pytest.raises(InvalidLabelsError, match=r"labels\[7\]"):
        calibkit.evaluate(labels, probs, space=[f"gce({binning},all,"
                                                f"{'classwise' if cc else 'pooled'},0.5,l1)"])
