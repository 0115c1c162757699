/* coco.h — the 80 COCO class names, in the order YOLO models number them. */
#ifndef ST_VISION_COCO_H
#define ST_VISION_COCO_H

#define ST_COCO_CLASSES 80

/* The name of class i, or NULL outside 0..79. */
const char *st_coco_name(int i);

#endif
