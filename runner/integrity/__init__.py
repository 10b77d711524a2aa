"""The integrity wing: the checks that decide whether a score was earned (../shared/INTEGRITY.md V1-V10).

Canaries and their difficulty calibration, causality probes, the code scan, the sealed split's answer
service and the val-test gap; the scorer calls them, and each says what it found in a typed verdict.
"""
