"""The Streamlit page of TF Fusion Explorer: small modules that collect input, call the engine and show its data.

Only this package and ``app.py`` import streamlit. Nothing here holds TensorFlow logic: the
engine (``explorer.engine``) runs the models, ``explorer.present`` draws graphs (``dot``) and
figures (``charts``); these modules decide where things go on the page.

- ``state``: session-state keys and their defaults (tests set them by these names).
- ``cached``: the one shared Engine, the machine's fingerprint, DOT/SVG strings.
- ``sidebar``: the model source's input, device, environment flags and Grappler switches -> ``Choice``;
  ``model_input`` (presets, op chains), ``stack_editor`` and ``upload`` are the sources' inputs.
- ``frame``: title, the "what is fusion" intro, the configuration as environment + command line.
- ``tabs``: the table of tabs; a model source's ``offers`` say which it gets. Each tab's panel:
  ``stages`` (two stages side by side, ``linked`` hover-linking them), ``why``, ``report``, ``passes``,
  ``bench`` (fused against unfused, and the size sweep; ``traffic`` under it), ``grappler_log``, ``xla``,
  ``matrix``.
- ``whatif``: pin a result, change one thing, compare.
- ``page``: the composition ``app.py`` runs; every panel that calls the engine is handed it.
"""
