DROP TABLE type_reprojections;
