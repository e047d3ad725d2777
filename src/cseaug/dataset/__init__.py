"""The dataset contract: schema, atomic publishing, dataset card, exports."""
