"""Page view models: what the entry, recipe, source and home pages show, and the entries API's queries
(``view_models``, ``entries``). Shared by the HTML views and their JSON twins.
May use: watch, measure and every domain below.
"""
