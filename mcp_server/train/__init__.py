"""Train room: render the SFT script, the mask check it embeds, and the embedded tiny model."""
