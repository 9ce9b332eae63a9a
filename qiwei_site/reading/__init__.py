"""The one reader of customer words: plain Python that imports no Django and no app of ours.

Normalisation (`normalise`), the safety gate by detector (`safety`), masking (`masking`), values
(`values`: amounts, places, dates), the instruction-like guard (`guard`), the extractor with its
clause rules in one ordered table (`extract`), the grounding reader (`grounding`), quoting for a
prompt (`quoting`) and the pure part of recall (`recall`). Every app reads text through here.
"""
