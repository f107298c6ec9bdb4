"""The Streamlit page of TF Fusion Explorer: small modules that collect input, call the engine and show its data.

Only this package and ``app.py`` import streamlit. Nothing here holds TensorFlow logic: the
engine (``explorer.engine``) runs the models, ``explorer.present`` draws graphs (``dot``) and
figures (``charts``); these modules decide where things go on the page.

- ``state``: session-state keys and their defaults (tests set them by these names).
- ``cached``: the one shared Engine, the machine's fingerprint, DOT/SVG strings.
- ``sidebar``: the model builder, device, environment flags and Grappler switches -> ``Choice``.
- ``frame``: title, the "what is fusion" intro, the configuration as environment + command line.
- ``stages``: two stages of the model side by side, coloured by their diff (a fragment).
- ``linked``: both graphs in one frame, where hovering a node lights up its counterparts on the other side.
- ``why``: why it fused (or not): the verdict, the pattern's checklist, the fixes.
- ``passes``: every Grappler pass on the model's function, and the graphs around one pass.
- ``bench``: fused against unfused, and the size sweep.
- ``whatif``: pin a result, change one thing, compare.
- ``page``: the composition ``app.py`` runs.
"""
