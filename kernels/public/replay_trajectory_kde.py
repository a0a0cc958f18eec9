"""Public kernels: replay_trajectory_classification (Eden-Kramer Lab), clusterless decoding of
hippocampal replay: a log-space kernel density estimate over position bins, one thread per
(decoding spike, position bin), a running maximum over encoding spikes and then a log-sum-exp
(`log_mean_over_bins`), and its product-kernel sibling that first adds mark log-densities read from
a lookup table at integer mark differences (`prod_kde`).

Repository: https://github.com/Eden-Kramer-Lab/replay_trajectory_classification
Paths and commits: replay_trajectory_classification/likelihoods/multiunit_likelihood_integer_gpu_log.py
(log_mean_over_bins, commit 9f1216d75b42f74ae0365521df31e3dbe22d2fc5);
replay_trajectory_classification/likelihoods/multiunit_likelihood_integer_gpu3.py (prod_kde, commit
2336e991fddf2550f2ae84764d8a9f106d10e2ac, the last one with that file)
Licence: MIT (LICENSE of the repository: "Copyright (c) 2019 Eric Denovellis"). Permission is hereby
granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without
limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, subject to the following conditions: The above copyright notice and this
permission notice shall be included in all copies or substantial portions of the Software. THE
SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
Edits: none to the kernel bodies. Upstream each kernel is defined inside a `try: import cupy as cp`
block (the module's GPU part); here they are at module level (dedented), with the imports they use.
"""
import math

from numba import cuda


@cuda.jit()
def log_mean_over_bins(log_mark_distances, log_position_distances, output):
    """

    Parameters
    ----------
    log_mark_distances : cp.ndarray, shape (n_decoding_spikes, n_encoding_spikes)
    log_position_distances : cp.ndarray, shape (n_encoding_spikes, n_position_bins)

    Returns
    -------
    output : cp.ndarray, shape (n_decoding_spikes, n_position_bins)

    """
    thread_id = cuda.grid(1)

    n_decoding_spikes, n_position_bins = output.shape
    n_encoding_spikes = log_position_distances.shape[0]

    decoding_ind = thread_id // n_position_bins
    pos_bin_ind = thread_id % n_position_bins

    if (decoding_ind < n_decoding_spikes) and (pos_bin_ind < n_position_bins):
        # find maximum
        max_exp = (
            log_mark_distances[decoding_ind, 0]
            + log_position_distances[0, pos_bin_ind]
        )

        for encoding_ind in range(1, n_encoding_spikes):
            candidate_max = (
                log_mark_distances[decoding_ind, encoding_ind]
                + log_position_distances[encoding_ind, pos_bin_ind]
            )
            if candidate_max > max_exp:
                max_exp = candidate_max

        # logsumexp
        tmp = 0.0
        for encoding_ind in range(n_encoding_spikes):
            tmp += math.exp(
                log_mark_distances[decoding_ind, encoding_ind]
                + log_position_distances[encoding_ind, pos_bin_ind]
                - max_exp
            )

        output[decoding_ind, pos_bin_ind] = math.log(tmp) + max_exp

        # divide by n_spikes to get the mean
        output[decoding_ind, pos_bin_ind] -= math.log(n_encoding_spikes)


@cuda.jit
def prod_kde(
    decoding_marks,
    encoding_marks,
    log_normal_pdf_lookup,
    log_position_distances,
    max_mark_diff,
    output
):
    """

    Parameters
    ----------
    decoding_marks : cupy.ndarray, shape (n_decoding_spikes, n_mark_features)
    encoding_marks : cupy.ndarray, shape (n_encoding_spikes, n_mark_features)
    log_normal_pdf_lookup : cupy.ndarray, shape (n_samples,)
    log_position_distances : cupy.ndarray, shape (n_encoding_spikes, n_position_bins)
    max_mark_diff : int

    Returns
    -------
    output : cupy.ndarray, shape (n_decoding_spikes, n_position_bins)

    """
    thread_id = cuda.grid(1)

    n_decoding_spikes, n_position_bins = output.shape
    n_encoding_spikes, n_mark_features = encoding_marks.shape

    decoding_ind = thread_id // n_position_bins
    pos_bin_ind = thread_id % n_position_bins

    if (decoding_ind < n_decoding_spikes) and (pos_bin_ind < n_position_bins):

        # Compute distance for the first encoding spike
        max_dist = 0.0
        for feature_ind in range(n_mark_features):
            max_dist += log_normal_pdf_lookup[
                decoding_marks[decoding_ind, feature_ind] -
                encoding_marks[0, feature_ind] +
                max_mark_diff
            ]

        max_dist += log_position_distances[0, pos_bin_ind]

        # Compute distances for the rest of the encoding spikes
        for enc_ind in range(1, n_encoding_spikes):
            candidate_max = 0.0
            for feature_ind in range(n_mark_features):
                candidate_max += log_normal_pdf_lookup[
                    decoding_marks[decoding_ind, feature_ind] -
                    encoding_marks[enc_ind, feature_ind] +
                    max_mark_diff
                ]
            candidate_max += log_position_distances[enc_ind, pos_bin_ind]

            # find max
            if candidate_max > max_dist:
                max_dist = candidate_max

        # Compute log sum exp
        log_sum_dist = 0.0
        for enc_ind in range(0, n_encoding_spikes):
            dist = 0.0
            for feature_ind in range(n_mark_features):
                dist += log_normal_pdf_lookup[
                    decoding_marks[decoding_ind, feature_ind] -
                    encoding_marks[enc_ind, feature_ind] +
                    max_mark_diff
                ]
            dist += log_position_distances[enc_ind, pos_bin_ind]

            log_sum_dist += math.exp(dist - max_dist)

        output[decoding_ind, pos_bin_ind] = (
            math.log(log_sum_dist) +
            max_dist -
            math.log(n_encoding_spikes)
        )
