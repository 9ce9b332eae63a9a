"""Context for one turn (DESIGN §8): the builder, recall and session search. No imports here, so
`memory.context.recall` stays importable without a configured Django."""
