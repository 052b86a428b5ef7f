DROP TABLE formula_queue;
