"""TF Fusion Explorer: see and measure what TensorFlow's Grappler remapper does to a model.

Importing the package imports nothing heavy: TensorFlow lives in the worker process only.
"""

__version__ = "0.1.0"
