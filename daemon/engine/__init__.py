"""How a maintenance operation is planned and carried out: plan, journal, store lock."""
