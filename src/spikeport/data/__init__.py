"""Evaluation data in numpy: what the deploy side (run, check-hw, bundle) reads without torch.

=================  ===========================================================================================
``images``         scikit-learn digits, CIFAR-10/100 python-pickle folders, ImageNet image folders: reading,
                   the evaluation preprocessing (resize, crop, normalise) and an artifact's test images
=================  ===========================================================================================

``spikeport.train.data`` wraps it for training (torch datasets, augmentation, loaders). scikit-learn (digits)
and PIL (image folders) are imported where they are needed; nothing here imports torch.
"""
