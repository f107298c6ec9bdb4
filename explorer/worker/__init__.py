"""The worker process: the only part of the explorer that imports TensorFlow.

Nothing outside this package imports it; ``explorer.engine.runner`` starts it as
``python -m explorer.worker`` with a configuration's environment set before TensorFlow loads.
Model sources each have a builder in ``models/``; compilers (Grappler, and beside it XLA) each
have a module that captures what they made of a model.
"""
